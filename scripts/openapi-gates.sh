#!/usr/bin/env bash
# The OpenAPI gates of .ci/run (about 2 minutes, most of it installing Spectral):
# 1. `npm run client` regenerates the document and the typed client: any difference from what
#    is committed fails (whoever changes the document must regenerate and commit them);
# 2. Redocly's recommended ruleset: 0 errors and 0 warnings (exceptions, each with its reason,
#    in .redocly.lint-ignore.yaml);
# 3. the document validates against the official OpenAPI 3.1 schema;
# 4. Spectral with the OWASP ruleset runs; its remaining findings are listed, each with a reason,
#    in docs/api.md. A finding does not fail the run; Spectral failing to run does.
# The linters are fetched with npx at pinned versions rather than kept as dev dependencies:
# only CI needs them, and they would add ~130 MB to every `npm ci`.
set -euo pipefail
cd "$(dirname "$0")/.."

npm run client
git diff --exit-code -- client/

REPORT=$(mktemp)
npx --yes @redocly/cli@2.77.0 lint --format=json client/openapi.json > "$REPORT" || true
node -e "
  const { totals } = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'))
  console.log('redocly lint (recommended): ' + totals.errors + ' errors, ' + totals.warnings + ' warnings, ' + totals.ignored + ' ignored')
  if (totals.errors + totals.warnings > 0) process.exit(1)
" "$REPORT"
rm -f "$REPORT"

npx --yes -p @seriousme/openapi-schema-validator@2.11.0 validate-api client/openapi.json

SPECTRAL=$(mktemp -d)
trap 'rm -rf "$SPECTRAL"' EXIT
npm install --prefix "$SPECTRAL" --no-audit --no-fund --loglevel=error @stoplight/spectral-cli@6.16.3 @stoplight/spectral-owasp-ruleset@2.0.1 >/dev/null
# The ruleset file sits beside the installed ruleset package, so that `extends` finds it.
cp .spectral.yaml "$SPECTRAL/"
status=0
"$SPECTRAL/node_modules/.bin/spectral" lint client/openapi.json --ruleset "$SPECTRAL/.spectral.yaml" --format text > "$SPECTRAL/findings.txt" || status=$?
if [[ $status -gt 1 ]]; then cat "$SPECTRAL/findings.txt"; exit "$status"; fi
echo "spectral (OWASP): $(grep -cE ' (error|warning) ' "$SPECTRAL/findings.txt" || true) findings, by rule:"
grep -oE ' (error|warning) +[a-z0-9:-]+' "$SPECTRAL/findings.txt" | sort | uniq -c | sort -rn || true
