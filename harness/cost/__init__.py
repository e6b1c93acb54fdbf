"""Cache cost as a tested property: the price pack, the simulation, and what they print.

- `_prices`: a request's prices and where each came from: a project's own rows (a negotiated
  rate), the price pack (`harness/providers/prices/*.json`: only what genai-prices lacks), then
  genai-prices;
- `_registry`: genai-prices' bundled list prices (never its network update);
- `_simulate`: a file's conversations, as the one cache replay (`harness.cache._replay`) gives
  them: request by request, what is read, written per TTL and sent uncached, under the rules pack
  and the recorded gaps and overlaps (optionally under another model's rules);
- `_cost`: the replay priced, the provider's counters summed, and their agreement;
- `_text`: one conversation's cost in a line (`harness cost`, the budget marker, the report).

`_read.conversations_of(paths)` is what `harness cost` and `harness report` read. This package
imports nothing itself: the capture config reads its price rows without loading the rest.
"""
