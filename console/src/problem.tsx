import type { Problem } from './api.js'

/** An error as the API's catalogue words it, announced to screen readers. */
export function ProblemText ({ problem }: { problem: Problem | undefined }) {
  if (problem === undefined) return null
  return (
    <div class='problem' role='alert'>
      <p>{problem.message}</p>
      {problem.errors !== undefined && problem.errors.length > 0 && (
        <ul>{problem.errors.map((e) => <li key={e.field}><code>{e.field}</code> {e.message}</li>)}</ul>
      )}
    </div>
  )
}
