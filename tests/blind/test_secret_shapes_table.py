"""Every key shape the harness knows, at its shortest, is found, named and redacted whole; one
character shorter it is left alone (issue 35: the shapes' regexes, needles, lengths and names
were read by no test to the character, so a mutant of any one of them survived).

Each row is the shortest string of its shape (the shape's minimum lengths exactly). A written
file is refused naming its kind, line and column (`scan_secrets`, what every write goes through,
its byte gate included); a printed line shows `[redacted]` in the key's place and nothing of it
(`redact_text`). The near miss, the same key one character short of its shape's minimum, is
neither found nor redacted: a wider or a shorter length in the shape fails one of the two.
"""

from __future__ import annotations

import pytest

from harness._shared._secrets import REDACTED, redact_text, scan_secrets

A = "A1b2C3d4E5"
HEX = "0123456789abcdef"

# (the shortest key of the shape, the kind a refusal names); the near miss: one character short.
# Longer `sk-` keys (Anthropic's, OpenAI's project keys) one short are still `sk-` keys: below.
SHAPES = [
    ("sk-" + HEX, "a secret key (sk-...)"),
    ("sk-" + A + "-_" + "abcd", "a secret key (sk-...)"),
    ("Bearer " + "abcdefghij0123456.~", "a bearer token (Bearer ...)"),
    ("bearer\t" + "abcdefghij0123456.~", "a bearer token (Bearer ...)"),
    ("AKIA" + "ABCDEFGH12345678", "an AWS access key id (AKIA...)"),
    ("ASIA" + "ABCDEFGH12345678", "an AWS access key id (AKIA...)"),
    ("ghp_" + A * 3, "a GitHub token (ghp_...)"),
    ("gho_" + A * 3, "a GitHub token (ghp_...)"),
    ("ghu_" + A * 3, "a GitHub token (ghp_...)"),
    ("ghs_" + A * 3, "a GitHub token (ghp_...)"),
    ("ghr_" + A * 3, "a GitHub token (ghp_...)"),
    ("github_pat_" + "A1b2_" * 4 + "A1", "a GitHub token (ghp_...)"),
    ("AIza" + A * 3 + "_-xyz", "a Google API key (AIza...)"),
    ("ya29." + A * 3, "a Google OAuth token (ya29....)"),
    ("xoxb-" + "1234567890abcd", "a Slack token (xox...)"),
    ("xoxp-" + "1234567890abcd", "a Slack token (xox...)"),
    ("eyJ" + "abcdefghij" + ".eyJ" + "abcdefghij" + "." + "abcdefghij", "a JSON web token"),
    ("gsk_" + A * 2, "a Groq API key (gsk_...)"),
    ("xai-" + A * 2, "an xAI API key (xai-...)"),
    ("hf_" + A * 3, "a Hugging Face token (hf_...)"),
    ("sk_live_" + A + "F6G7H8", "a Stripe secret key (sk_live_...)"),
    ("rk_test_" + A + "F6G7H8", "a Stripe secret key (sk_live_...)"),
    ("pplx-" + A * 3 + "ab", "a Perplexity API key (pplx-...)"),
    ("r8_" + A * 3, "a Replicate API token (r8_...)"),
    ("fw_" + A * 2, "a Fireworks API key (fw_...)"),
    ("glpat-" + A * 2, "a GitLab token (glpat-...)"),
    ("npm_" + A * 3 + "abcdef", "an npm token (npm_...)"),
    ("pypi-AgE" + A * 5, "a PyPI token (pypi-...)"),
    ("dop_v1_" + HEX * 4, "a DigitalOcean token (dop_v1_...)"),
    ("dor_v1_" + HEX * 4, "a DigitalOcean token (dop_v1_...)"),
    ("dapi" + HEX * 2, "a Databricks token (dapi...)"),
    ("SG." + A * 2 + "F6" + "." + A * 4 + "xyz", "a SendGrid API key (SG....)"),
    ("shpat_" + HEX * 2, "a Shopify token (shpat_...)"),
    ("shpss_" + HEX * 2, "a Shopify token (shpat_...)"),
    ("SK" + HEX * 2, "a Twilio API key (SK...)"),
    ("key-" + A * 3 + "ab", "a Mailgun API key (key-...)"),
    ("lin_api_" + A * 3 + "ab", "a Linear API key (lin_api_...)"),
    ("ntn_" + A * 4, "a Notion token (ntn_...)"),
    ("secret_" + A * 4 + "abc", "a Notion token (ntn_...)"),
    ("PMAK-" + HEX + "01234567" + "-" + HEX * 2 + "01", "a Postman API key (PMAK-...)"),
    ("ATATT" + A * 4, "an Atlassian API token (ATATT...)"),
    ("123456789:AA" + A * 3 + "abc", "a Telegram bot token"),
]


@pytest.mark.parametrize(("key", "kind"), SHAPES, ids=[kind for _, kind in SHAPES])
def test_the_shortest_key_of_each_shape_is_named_and_redacted_whole(key: str, kind: str) -> None:
    text = f"use {key} now"
    found = scan_secrets(text.encode())
    assert [f.describe() for f in found] == [f"{kind} at line 1, column 5"]
    assert redact_text(text) == f"use {REDACTED} now"
    # one character short of the shape: no key
    short = f"use {key[:-1]} now"
    assert scan_secrets(short.encode()) == [], short
    assert redact_text(short) == short


def test_an_anthropic_key_is_told_from_other_sk_keys() -> None:
    anthropic = "sk-ant-" + "Ab9_" * 4
    assert [f.kind for f in scan_secrets(anthropic.encode())] == [
        "an Anthropic API key (sk-ant-...)"
    ]
    # one short of Anthropic's shape, it is still a secret key
    assert [f.kind for f in scan_secrets(anthropic[:-1].encode())] == ["a secret key (sk-...)"]
    for key in ("sk-proj-" + A * 2, "sk-svcacct-" + A * 2, "sk-admin-" + A * 2):
        assert [f.kind for f in scan_secrets(f"x {key}".encode())] == ["a secret key (sk-...)"]
        assert redact_text(f"x {key}") == f"x {REDACTED}"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (  # the webhook's host and path stay readable; from `hooks.` on it is the secret
            "post to https://hooks.slack.com/services/T0123/B0456/" + A * 2 + " now",
            f"post to https://{REDACTED} now",
        ),
        (  # a private key's body runs to its END line
            "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY----- done",
            f"-----{REDACTED} done",
        ),
        (  # a credential after its name: the value only
            'api_key = "' + A * 3 + 'ab", next',
            f'api_key = "{REDACTED}", next',
        ),
        ('"PASSWORD":"' + A * 3 + 'ab"', f'"PASSWORD":"{REDACTED}"'),
    ],
    ids=["slack-webhook", "private-key", "credential-after-name", "credential-upper-case"],
)
def test_the_shapes_without_a_fixed_start_are_redacted_where_they_say(
    text: str, shown: str
) -> None:
    assert redact_text(text) == shown
    assert len(scan_secrets(text.encode())) == 1


def test_the_kinds_of_the_shapes_without_a_fixed_start_are_named() -> None:
    for text, kind in (
        ("https://hooks.slack.com/services/T0123/B0456/" + A * 2, "a Slack webhook URL"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----", "a private key"),
        (
            "x\nsecret_key: " + A * 3 + "ab",
            "a long credential after a key-like name (api_key, secret, token, password)",
        ),
    ):
        assert [f.kind for f in scan_secrets(text.encode())] == [kind], text


def test_a_credential_beside_non_ascii_text_is_found() -> None:
    # non-ASCII text in the window: the name is matched by Unicode case folding, never skipped
    text = 'café: api_key = "' + A * 3 + 'ab"'
    assert redact_text(text) == f'café: api_key = "{REDACTED}"'
    assert [f.kind for f in scan_secrets(text.encode())] == [
        "a long credential after a key-like name (api_key, secret, token, password)"
    ]


@pytest.mark.parametrize("count", [2, 17, 40], ids=["few", "just-many", "many"])
def test_every_place_a_known_value_stands_is_found(count: int) -> None:
    # the values of redacted headers: looked for one by one, or (more than 16, a proxy log's) as
    # one search; at the text's start, twice, and another
    values = [f"plain-value-{n:03d}" for n in range(count)]
    known = values[1]
    text = f"{known} and {known}, then {values[-1]}"
    assert redact_text(text, secrets=values) == f"{REDACTED} and {REDACTED}, then {REDACTED}"
    found = scan_secrets(text.encode(), secrets=values)
    assert [(f.kind, f.column) for f in found] == [
        ("the value of a redacted header", 1),
        ("the value of a redacted header", 21),
        ("the value of a redacted header", 43),
    ]
    assert redact_text("nothing here", secrets=values) == "nothing here"
