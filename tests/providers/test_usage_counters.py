"""Each provider's full counters from a response: reads, writes with their TTL split, the miss
reason and missed tokens, output tokens (what the cost model prices and compares)."""

from __future__ import annotations

from harness.providers import CacheUsage, cache_usage


def test_anthropic_counters_with_the_ttl_split_and_the_miss_reason() -> None:
    response = {
        "usage": {
            "input_tokens": 12,
            "cache_read_input_tokens": 4000,
            "cache_creation_input_tokens": 1500,
            "cache_creation": {"ephemeral_5m_input_tokens": 500, "ephemeral_1h_input_tokens": 1000},
            "output_tokens": 80,
        },
        "diagnostics": {
            "cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 900}
        },
    }
    assert cache_usage("anthropic", response) == CacheUsage(
        "anthropic",
        read_tokens=4000,
        written_tokens=1500,
        uncached_tokens=12,
        miss_reason="tools_changed",
        written_ttl=(("5m", 500), ("1h", 1000)),
        missed_tokens=900,
        output_tokens=80,
    )
    found = cache_usage("anthropic", response)
    assert found is not None and found.input_tokens == 5512


def test_openai_writes_ttl_split_and_diagnostics() -> None:
    response = {
        "usage": {
            "input_tokens": 5000,
            "input_tokens_details": {
                "cached_tokens": 3072,
                "cache_write_tokens": 1800,
                "cache_write_tokens_details": {"ttl_30m_tokens": 1800},
            },
            "output_tokens": 40,
        },
        "prompt_cache_diagnostics": {
            "type": "cache_miss",
            "reason": "reasoning_effort_changed",
            "cache_missed_tokens": 128,
        },
    }
    assert cache_usage("openai-responses", response) == CacheUsage(
        "openai-responses",
        read_tokens=3072,
        written_tokens=1800,
        uncached_tokens=128,
        miss_reason="reasoning_effort_changed",
        written_ttl=(("30m", 1800),),
        missed_tokens=128,
        output_tokens=40,
    )
    chat = {"usage": {"prompt_tokens": 2000, "prompt_tokens_details": {"cached_tokens": 1024}}}
    assert cache_usage("openai-chat", chat) == CacheUsage(
        "openai-chat", read_tokens=1024, uncached_tokens=976
    )


def test_gemini_bedrock_and_deepseek_output_tokens() -> None:
    gemini = {
        "usageMetadata": {
            "promptTokenCount": 3000,
            "cachedContentTokenCount": 2048,
            "candidatesTokenCount": 12,
        }
    }
    assert cache_usage("gemini", gemini) == CacheUsage(
        "gemini", read_tokens=2048, uncached_tokens=952, output_tokens=12
    )
    bedrock = {
        "usage": {
            "inputTokens": 5,
            "cacheReadInputTokens": 1200,
            "cacheWriteInputTokens": 300,
            "outputTokens": 9,
        }
    }
    assert cache_usage("bedrock", bedrock) == CacheUsage(
        "bedrock", read_tokens=1200, written_tokens=300, uncached_tokens=5, output_tokens=9
    )
    deepseek = {
        "usage": {
            "prompt_cache_hit_tokens": 640,
            "prompt_cache_miss_tokens": 60,
            "completion_tokens": 7,
        }
    }
    assert cache_usage("deepseek", deepseek) == CacheUsage(
        "deepseek", read_tokens=640, uncached_tokens=60, output_tokens=7
    )
