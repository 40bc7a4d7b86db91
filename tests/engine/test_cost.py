"""Usage tallies and the optional price table."""

from __future__ import annotations

import contextlib
import io

import msgspec
import pytest

from adapters.models.base import Usage
from engine.cost import PriceTable, UsageTally, format_cost_lines


def test_price_lookup_exact_then_longest_glob() -> None:
    table = PriceTable.from_config(
        {
            "openai:gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10},
            "openai:*": {"input_per_mtok": 1, "output_per_mtok": 1},
            "openai:gpt-4o-*": {"input_per_mtok": 0.15, "output_per_mtok": 0.6},
        }
    )
    assert table.lookup("openai:gpt-4o").input_per_mtok == 2.5
    assert table.lookup("openai:gpt-4o-mini").input_per_mtok == 0.15
    assert table.lookup("openai:o3").input_per_mtok == 1
    assert table.lookup("gemini:flash") is None


def test_bad_price_entry_is_a_validation_error() -> None:
    with pytest.raises(msgspec.ValidationError):
        PriceTable.from_config({"m": {"input_per_mtok": "cheap", "output_per_mtok": 1}})


def test_a_bad_price_entry_is_named_by_its_key_in_the_file(tmp_path) -> None:
    # msgspec's path for a dict value is `$.prices[...]`: with several entries the user was not
    # told which one lacks a field, and the message carried the path's leftover " - at …".
    from engine.cli import main

    config = tmp_path / "run.toml"
    config.write_text('[prices."openai:*"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n'
                      '[prices."gemini:*"]\ninput_per_mtok = 1\n')
    with pytest.raises(msgspec.ValidationError,
                       match=r'^\[prices."gemini:\*"\]: .*output_per_mtok'):
        PriceTable.from_config({"openai:*": {"input_per_mtok": 1, "output_per_mtok": 2},
                                "gemini:*": {"input_per_mtok": 1}})
    for argv in (["run", "--config", str(config), "--model", "openai:m", "--store",
                  str(tmp_path / "s.lmdb"), "--dry-run"],
                 ["report", str(tmp_path / "nowhere.lmdb"), "--config", str(config)]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert main(argv) == 2
        assert '[prices."gemini:*"]' in err.getvalue() and " - at " not in err.getvalue(), (
            err.getvalue())


def test_cost_lines_and_total() -> None:
    tally = UsageTally()
    tally.add("openai:gpt-4o", Usage(input_tokens=1_000_000, output_tokens=100_000))
    tally.add("openai:gpt-4o", Usage(input_tokens=500_000, output_tokens=0))
    tally.add("anthropic:claude", Usage(input_tokens=2_000, output_tokens=1_000))
    table = PriceTable.from_config(
        {
            "openai:gpt-4o": {"input_per_mtok": 2.5, "output_per_mtok": 10},
            "anthropic:*": {"input_per_mtok": 3, "output_per_mtok": 15},
        }
    )
    lines = tally.lines(table)
    assert [line.model for line in lines] == ["anthropic:claude", "openai:gpt-4o"]
    gpt = lines[1]
    assert (gpt.calls, gpt.input_tokens, gpt.output_tokens) == (2, 1_500_000, 100_000)
    assert gpt.cost == pytest.approx(1.5 * 2.5 + 0.1 * 10)
    text = format_cost_lines(lines)
    assert "openai:gpt-4o: 2 replies, 1,500,000 in / 100,000 out tokens, 4.7500 USD" in text
    assert text.endswith(f"total: {4.75 + 0.006 + 0.015:.4f} USD")


def test_unpriced_model_reports_unknown_and_no_total() -> None:
    tally = UsageTally()
    tally.add("reference:calibrated", Usage(input_tokens=10, output_tokens=5))
    text = format_cost_lines(tally.lines(None))
    assert "cost unknown" in text and "total" not in text


def test_replies_without_token_counts_cost_unknown_not_zero() -> None:
    # A server that sends no usage: its replies were counted as 0 tokens, and the summary said
    # they cost 0.0000.
    table = PriceTable.from_config({"openai:*": {"input_per_mtok": 2.5, "output_per_mtok": 10}})
    tally = UsageTally()
    tally.add("openai:x", Usage(), calls=7)
    tally.add("openai:y", Usage(input_tokens=1000, output_tokens=10))
    text = format_cost_lines(tally.lines(table))
    assert "openai:x: 7 replies, 0 in / 0 out tokens, cost unknown (no token counts)" in text
    assert "openai:y: 1 reply" in text and "total" not in text


def test_cached_prompt_tokens_at_their_own_rate_else_at_the_input_rate() -> None:
    table = PriceTable.from_config({
        "openai:gpt-4o": {"input_per_mtok": 2.0, "output_per_mtok": 8.0,
                          "cached_input_per_mtok": 0.5},
        "gemini:*": {"input_per_mtok": 2.0, "output_per_mtok": 8.0},
    })
    tally = UsageTally()
    for model in ("openai:gpt-4o", "gemini:pro"):
        tally.add(model, Usage(input_tokens=1_000_000, output_tokens=0,
                               cached_input_tokens=600_000))
    gemini, gpt = tally.lines(table)
    assert gpt.cost == pytest.approx(0.4 * 2.0 + 0.6 * 0.5)
    # No cached rate given: every prompt token at the input rate (a cap is kept, never overrun).
    assert gemini.cost == pytest.approx(2.0)
    text = format_cost_lines([gpt])
    assert "1,000,000 in (600,000 cached) / 0 out tokens, 1.1000 USD" in text
    # A provider that says more were cached than were sent: no more than the input is cheaper.
    price = table.lookup("openai:gpt-4o")
    assert price.cost(100, 0, cached_input_tokens=500) == pytest.approx(100 * 0.5 / 1e6)
    assert price.cost(100, 0, cached_input_tokens=-5) == pytest.approx(100 * 2.0 / 1e6)


@pytest.mark.parametrize("rate", [-1.0, float("nan"), "half"])
def test_a_bad_cached_rate_is_refused(rate) -> None:
    with pytest.raises(msgspec.ValidationError):
        PriceTable.from_config({"m": {"input_per_mtok": 1, "output_per_mtok": 1,
                                      "cached_input_per_mtok": rate}})


def test_cache_writes_at_their_own_rate_else_at_a_quarter_above_the_input_rate() -> None:
    table = PriceTable.from_config({
        "anthropic:opus": {"input_per_mtok": 4.0, "output_per_mtok": 0.0,
                           "cached_input_per_mtok": 0.4, "cache_write_per_mtok": 5.0},
        "anthropic:*": {"input_per_mtok": 4.0, "output_per_mtok": 0.0},
    })
    tally = UsageTally()
    for model in ("anthropic:opus", "anthropic:haiku"):
        tally.add(model, Usage(input_tokens=1_000_000, cached_input_tokens=500_000,
                               cache_write_input_tokens=300_000))
    haiku, opus = tally.lines(table)
    assert opus.cost == pytest.approx(0.2 * 4.0 + 0.5 * 0.4 + 0.3 * 5.0)
    # No rates given: reads at the input rate, writes at 1.25 times it (never below the bill).
    assert haiku.cost == pytest.approx(0.7 * 4.0 + 0.3 * 4.0 * 1.25)
    assert "1,000,000 in (500,000 cached, 300,000 written to cache) / 0 out" in \
        format_cost_lines([opus])
    # Counts that do not add up cost no less than the input at its own rate, never negative.
    price = table.lookup("anthropic:opus")
    assert price.cost(100, 0, cached_input_tokens=90, cache_write_input_tokens=90) == \
        pytest.approx((90 * 5.0 + 10 * 0.4) / 1e6)
    assert price.cost(100, 0, cache_write_input_tokens=-3) == pytest.approx(100 * 4.0 / 1e6)


def test_a_model_name_with_control_characters_prints_as_one_visible_line() -> None:
    # Names come from the log, and a store may come from anywhere: an escape sequence in one
    # must not recolour or split the summary.
    tally = UsageTally()
    tally.add("openai:\x1b[31mx\nfake", Usage(input_tokens=10, output_tokens=1))
    text = format_cost_lines(tally.lines(), priced=False)
    assert "\x1b" not in text and "\n" not in text and "\\x1b[31mx\\nfake" in text


def test_some_replies_without_token_counts_make_the_cost_a_lower_bound() -> None:
    # Three of ten replies came with no counts (a proxy that drops usage now and then): the
    # cost of the other seven was printed as the model's, with no word of the three.
    table = PriceTable.from_config({"openai:*": {"input_per_mtok": 1, "output_per_mtok": 1}})
    tally = UsageTally()
    for n in range(10):
        tally.add("openai:x", Usage(input_tokens=0 if n < 3 else 1000, output_tokens=10))
    tally.add("openai:y", Usage(input_tokens=500, output_tokens=10), calls=2, uncounted=0)
    (x, y) = tally.lines(table)
    assert (x.calls, x.uncounted_calls, y.uncounted_calls) == (10, 3, 0)
    text = format_cost_lines([x, y])
    assert ("openai:x: 10 replies (3 without token counts), 7,000 in / 100 out tokens, "
            "at least 0.0071 USD") in text
    assert "openai:y: 2 replies, 500 in / 10 out tokens, 0.0005 USD" in text
    assert "total: at least 0.0076 USD" in text


def test_cost_lines_follow_the_tables_order_then_the_names() -> None:
    tally = UsageTally()
    for model in ("zeta:m", "alpha:m", "mid:m"):
        tally.add(model, Usage(10, 5))
    assert [line.model for line in tally.lines()] == ["alpha:m", "mid:m", "zeta:m"]
    # The tables' order first (a model it names that replied nothing is left out), then the rest.
    ordered = tally.lines(order=["zeta:m", "gone:m", "mid:m"])
    assert [line.model for line in ordered] == ["zeta:m", "mid:m", "alpha:m"]
