"""Reliability and security suite (issue 7): bad input, atomic writes, names, secrets, fuzzing.

Every promise of docs/guarantees.md under attack. Issue 24's second round, one attack per file:
printed secrets and junitxml plumbing (1, 13) `test_printed_secrets`; the prefix-chain gate's key
order and growing system (2, 3) `test_prefix_gate`; a skipped module's recordings (4)
`test_unused_recordings`; partial recordings (5) `test_partial_recordings`; every cassette checked
(6) `test_check_cassettes`; streams while recording (7) `test_streaming_capture`; lingering work
(8) `test_lingering_work`; a broken provider plugin (9) `test_provider_isolation`; stream deltas
per channel and any `Authorization` scheme (10, 11) `test_secret_property`; `harness init` on odd
folders (12) `test_init_folders`; one cassette order and its timing (14) `test_concurrent_order`.

Issue 32's third round, a file per door: urllib3 status retries, compressed request bodies and
botocore retrying a replay mismatch `test_attack3_clients`; InvokeModel bodies of non-Anthropic
models `test_attack3_invoke`; who owns a thread started before the fixture, a lazily started
worker, pool order and an edited middle step of a growing message (decision 0029)
`test_attack3_owners`; aiohttp's bodies, middlewares, trace configs and redirects under capture
`test_attack3_aiohttp`; the network guard's other doors (a bare address, UDP, reverse lookups,
resolvers bound at import, c-ares, uvloop, look-alike loopback names), run in a network namespace
of their own (decision 0032) `test_attack3_guard`; keys glued to words (every shape and glue,
through a cassette and every printer), cookies, the CLI's input headers, percent, base64 and URL
userinfo encodings `test_attack3_secrets`; JSON that parses after redaction, bounded and escaped
lines, inert Markdown `test_attack3_printed` (decision 0031); budgets that could not fail, a
cassette judging nothing, unknown fields `test_attack3_passes`; session times in milliseconds or
out of range, bad base64, rules and price numbers out of range `test_attack3_input`; links out of
the project, reports cut short, FIFO outputs `test_attack3_files` (decision 0033).
"""
