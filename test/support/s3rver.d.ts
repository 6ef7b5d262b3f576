// The part of @20minutes/s3rver (a CommonJS package without types) that the tests use.
declare module '@20minutes/s3rver' {
  interface S3rverOptions {
    port: number
    address: string
    directory: string
    silent: boolean
    configureBuckets: Array<{ name: string }>
  }
  export default class S3rver {
    constructor (options: S3rverOptions)
    run (): Promise<{ address: string, port: number }>
    close (): Promise<void>
  }
}
