"""The cache model: what a provider's prompt cache keeps of a request, block for block.

One model, one judge: the prefix-chain gate (`harness.capture`), `harness lint` and its rules
(`harness.rules`), `harness diff`, the cost model (`harness.cost`) and `harness scan` all read a
request through this wing, never through a second opinion of their own.

- `_layout`: a request as its provider keys the cache: the units (a tool, a system block, a
  message's content block, an input item, a part) in cache order, each with a running digest,
  and the breakpoints between them; the provider's equivalences (Anthropic's string content is
  its one text block) and what never reaches the prefix (a deferred tool) are applied here.
- `_tokens`, `_counters`: how many tokens a prefix holds (the provider's usage, a token counter,
  else bytes / 4).
- `_analysis`: one request under the rules pack (its model, minimum, marks, what it writes).

Nothing here is public; `harness.rules` re-exports what a project registers (token counters) and
what a rule reads (`Analysis`, `LintRequest`).
"""
