// Lints Cypher statements with Neo4j's own parser and semantic analysis
// (@neo4j-cypher/language-support, lintCypherQuery): syntax, undefined variables, parameters.
//
// stdin: JSON, either [{name, query, params: [...]}] or
//        {labels: [...], relationshipTypes: [...], statements: [{name, query, params: [...]}]}
// With labels/relationshipTypes, a label or type outside those lists is reported (a warning of the
// linter; --strict turns warnings into failures).
// Also reported as an error: a declared parameter that the statement never uses.
// Exit status: 0 clean, 1 when any statement has an Error diagnostic (or any warning with --strict),
// 2 on bad input.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

// The package's ESM build uses extension-less imports that Node cannot resolve; its CJS build works.
const require = createRequire(import.meta.url);
const { lintCypherQuery, parserWrapper } = require('@neo4j-cypher/language-support');

const SEVERITY = { 1: 'error', 2: 'warning', 3: 'info', 4: 'hint' };
const strict = process.argv.includes('--strict');

function readInput() {
  let data;
  try {
    data = JSON.parse(readFileSync(0, 'utf8'));
  } catch (err) {
    console.error(`cypher-lint: stdin is not JSON: ${err.message}`);
    process.exit(2);
  }
  const statements = Array.isArray(data) ? data : data.statements;
  if (!Array.isArray(statements)) {
    console.error('cypher-lint: expected a list of {name, query, params}');
    process.exit(2);
  }
  return { statements, labels: data.labels, relationshipTypes: data.relationshipTypes };
}

function usedParameters(query) {
  const parsed = parserWrapper.parse(query);
  const names = new Set();
  for (const statement of parsed.statementsParsing) {
    for (const p of statement.collectedParameters ?? []) names.add(p.name.replace(/^`|`$/g, ''));
  }
  return names;
}

function lintOne({ name, query, params = [] }, { labels, relationshipTypes }) {
  const schema = { parameters: Object.fromEntries(params.map((p) => [p, null])) };
  if (labels && relationshipTypes) {
    schema.labels = labels;
    schema.relationshipTypes = relationshipTypes;
  }
  const diagnostics = lintCypherQuery(query, schema).map((d) => ({
    severity: SEVERITY[d.severity] ?? String(d.severity),
    message: d.message,
    line: d.range.start.line + 1,
    column: d.range.start.character + 1,
  }));
  const used = usedParameters(query);
  for (const p of params) {
    if (!used.has(p)) {
      diagnostics.push({ severity: 'error', message: `Parameter $${p} is declared but not used.`, line: 1, column: 1 });
    }
  }
  return { name, diagnostics };
}

const input = readInput();
let failed = 0;
for (const statement of input.statements) {
  const { name, diagnostics } = lintOne(statement, input);
  const bad = diagnostics.filter((d) => d.severity === 'error' || (strict && d.severity === 'warning'));
  if (bad.length) failed += 1;
  for (const d of diagnostics) {
    console.log(`${name}:${d.line}:${d.column}: ${d.severity}: ${d.message}`);
  }
}
console.log(`cypher-lint: ${input.statements.length} statement(s), ${failed} with errors`);
process.exit(failed ? 1 : 0);
