import { processImage, type ImageLimits } from './image-processing.js'

// The image process's entry (image-process.ts starts it): jobs come by IPC, each a file to read
// and a folder to write, and their outcome goes back by IPC. No pixel or byte of an image
// crosses: both sides work on files. It exits when its parent goes (the channel closes).

interface Job { id: number, input: string, output: string, limits: ImageLimits }

process.on('message', (job: Job) => {
  processImage(job.input, job.output, job.limits).then(
    (result) => { process.send?.({ id: job.id, result }) },
    (error: unknown) => { process.send?.({ id: job.id, error: String(error) }) }
  )
})
process.on('disconnect', () => { process.exit(0) })
