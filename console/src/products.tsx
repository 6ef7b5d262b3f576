import { useEffect, useState } from 'preact/hooks'
import type { components } from '../../client/schema.js'
import { api, problemOf, type Problem } from './api.js'
import { date, sameOrigin } from './format.js'
import { usePages } from './pages.js'
import { ProblemText } from './problem.js'

type Product = components['schemas']['Product']
type Category = Product['category']
type Image = components['schemas']['Image']

const CATEGORIES: readonly Category[] = ['BOOK', 'CLOTHING', 'ELECTRONICS', 'FOOD', 'HOME', 'SPORTS']
const failed = { data: undefined, error: undefined, response: undefined }

/** GET /v1/products: newest first, a page at a time, searched by name. */
export function ProductsScreen () {
  const [q, setQ] = useState('')
  const pages = usePages((search: string, cursor) => api.GET('/v1/products', {
    params: { query: { limit: 20, ...(search.trim() === '' ? {} : { q: search }), ...(cursor === undefined ? {} : { cursor }) } }
  }), '')
  useEffect(() => { void pages.first('') }, [])
  const products = pages.items

  return (
    <section aria-labelledby='products-title'>
      <h1 id='products-title'>Products</h1>
      <p><a class='button' href='#/products/new'>New product</a></p>
      <form role='search' onSubmit={(event) => { event.preventDefault(); void pages.first(q) }}>
        <label for='product-search'>Name</label>
        <input id='product-search' type='search' value={q} onInput={(event) => { setQ((event.target as HTMLInputElement).value) }} />
        <button type='submit'>Search</button>
      </form>
      <ProblemText problem={pages.problem} />
      {pages.loading && <p aria-live='polite'>Loading…</p>}
      {!pages.loading && pages.problem === undefined && products.length === 0 && <p>No product matches.</p>}
      <ul class='cards'>
        {products.map((product) => (
          <li key={product.id} class='with-picture'>
            {product.images[0] !== undefined && <img src={sameOrigin(product.images[0].variants.thumb)} alt='' width={48} height={48} />}
            <a href={`#/products/${product.id}`}>{product.name}</a>
            <span>{product.category} · price {product.price} · {product.stock} in stock · {product.onSale ? 'on sale' : 'not on sale'}</span>
          </li>
        ))}
      </ul>
      {pages.more && <button type='button' onClick={() => { void pages.next() }}>More products</button>}
    </section>
  )
}

/** The members an operator writes, from the form (an empty number field is left out, so the API names it). */
function members (form: HTMLFormElement): { name: string, price?: number, category: Category, stock?: number, onSale: boolean } {
  const fields = new FormData(form)
  const number = (name: string): number | undefined => fields.get(name) === '' ? undefined : Number(fields.get(name))
  return {
    name: String(fields.get('name')),
    price: number('price'),
    category: String(fields.get('category')) as Category,
    stock: number('stock'),
    onSale: fields.get('onSale') === 'on'
  }
}

function ProductFields ({ product }: { product: Product | undefined }) {
  return (
    <>
      <label for='product-name'>Name</label>
      <input id='product-name' name='name' defaultValue={product?.name ?? ''} />
      <label for='product-price'>Price (whole units of the smallest coin, as the API counts it)</label>
      <input id='product-price' name='price' type='number' step={1} defaultValue={product === undefined ? '' : String(product.price)} />
      <label for='product-category'>Category</label>
      <select id='product-category' name='category' defaultValue={product?.category ?? 'BOOK'}>
        {CATEGORIES.map((category) => <option key={category} value={category}>{category}</option>)}
      </select>
      <label for='product-stock'>Stock</label>
      <input id='product-stock' name='stock' type='number' step={1} defaultValue={product === undefined ? '0' : String(product.stock)} />
      <label class='check'><input name='onSale' type='checkbox' defaultChecked={product?.onSale ?? true} /> On sale</label>
    </>
  )
}

/** POST /v1/products, then the new product's page. */
export function NewProductScreen () {
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  async function create (form: HTMLFormElement): Promise<void> {
    setProblem(undefined)
    const { data, error, response } = await api.POST('/v1/products', { body: members(form) as components['schemas']['ProductCreateRequest'] }).catch(() => failed)
    if (data !== undefined) location.hash = `#/products/${data.id}`
    else setProblem(problemOf(error, response))
  }
  return (
    <section aria-labelledby='new-product-title'>
      <h1 id='new-product-title'>New product</h1>
      <form class='stacked' onSubmit={(event) => { event.preventDefault(); void create(event.currentTarget) }}>
        <ProductFields product={undefined} />
        <button type='submit'>Create product</button>
      </form>
      <ProblemText problem={problem} />
    </section>
  )
}

/** A product: its members edited with If-Match (a change made meanwhile is 412, then shown), its images. */
export function ProductScreen ({ id }: { id: string }) {
  const [product, setProduct] = useState<Product | undefined>(undefined)
  const [etag, setEtag] = useState<string | undefined>(undefined)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const [done, setDone] = useState<string | undefined>(undefined)

  async function read (): Promise<void> {
    const { data, error, response } = await api.GET('/v1/products/{id}', { params: { path: { id } } }).catch(() => failed)
    if (data === undefined) { setProblem(problemOf(error, response)); return }
    setProduct(data)
    setEtag(response.headers.get('etag') ?? undefined)
  }
  useEffect(() => { void read() }, [id])

  async function save (form: HTMLFormElement): Promise<void> {
    setProblem(undefined)
    setDone(undefined)
    const { data, error, response } = await api.PATCH('/v1/products/{id}', {
      params: { path: { id }, header: etag === undefined ? {} : { 'if-match': etag } },
      body: members(form) as components['schemas']['ProductPatchRequest']
    }).catch(() => failed)
    if (data !== undefined) {
      setProduct(data)
      setEtag(response.headers.get('etag') ?? undefined)
      setDone('The product is saved.')
      return
    }
    const refused = problemOf(error, response)
    setProblem(refused)
    if (refused.status === 412) {
      await read()
      setDone('The form now shows the product as it is: make the change again.')
    }
  }

  async function upload (files: FileList | File[]): Promise<void> {
    setProblem(undefined)
    setDone(undefined)
    let added = 0
    for (const file of Array.from(files)) {
      const form = new FormData()
      form.append('file', file, file.name)
      const { data, error, response } = await api.POST('/v1/products/{id}/images', { params: { path: { id } }, body: form as never }).catch(() => failed)
      if (data === undefined) {
        const refused = problemOf(error, response)
        setProblem({ ...refused, message: `${file.name}: ${refused.message}` })
        break
      }
      added += 1
    }
    if (added > 0) setDone(added === 1 ? 'The image is added.' : `${added} images are added.`)
    await read()
  }

  async function remove (image: Image): Promise<void> {
    if (!confirm(`Remove image ${image.id} of ${product?.name ?? 'this product'}? Its address stops answering.`)) return
    setProblem(undefined)
    setDone(undefined)
    const { error, response } = await api.DELETE('/v1/products/{id}/images/{imageId}', { params: { path: { id, imageId: String(image.id) } } }).catch(() => failed)
    if (response?.status === 204) setDone('The image is removed.')
    else setProblem(problemOf(error, response))
    await read()
  }

  return (
    <section aria-labelledby='product-title'>
      <h1 id='product-title'>{product?.name ?? `Product ${id}`}</h1>
      {product === undefined && problem === undefined && <p aria-live='polite'>Loading…</p>}
      {product !== undefined && (
        <>
          <form key={product.updatedAt} class='stacked' onSubmit={(event) => { event.preventDefault(); void save(event.currentTarget) }}>
            <ProductFields product={product} />
            <button type='submit'>Save product</button>
          </form>
          <p>Created {date(product.createdAt)}, changed {date(product.updatedAt)}.</p>
        </>
      )}
      {done !== undefined && <p role='status'>{done}</p>}
      <ProblemText problem={problem} />
      {product !== undefined && (
        <>
          <h2>Images</h2>
          {product.images.length === 0 && <p>No images.</p>}
          <ul class='pictures'>
            {product.images.map((image, index) => (
              <li key={image.id}>
                <a href={sameOrigin(image.url)}><img src={sameOrigin(image.variants.thumb)} alt={`Image ${index + 1} of ${product.name}`} width={100} height={100} /></a>
                <span>{image.width} × {image.height}, {Math.ceil(image.size / 1024)} KB</span>
                <button type='button' class='danger' onClick={() => { void remove(image) }}>Remove image {index + 1}</button>
              </li>
            ))}
          </ul>
          <div
            class='drop'
            onDragOver={(event) => { event.preventDefault() }}
            onDrop={(event) => { event.preventDefault(); if (event.dataTransfer !== null) void upload(event.dataTransfer.files) }}
          >
            <label for='product-images'>Add images (JPEG, PNG, WebP, AVIF or GIF), or drop them here</label>
            <input id='product-images' type='file' accept='image/jpeg,image/png,image/webp,image/avif,image/gif' multiple onChange={(event) => { const input = event.currentTarget; if (input.files !== null) void upload(input.files).then(() => { input.value = '' }) }} />
          </div>
        </>
      )}
    </section>
  )
}
