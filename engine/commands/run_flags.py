"""The flags of ``vaot run`` and their help: what it accepts, its examples, how a rerun
resumes, and its exit statuses.

:mod:`engine.commands.run` exposes :func:`add_arguments` to the command line;
:mod:`engine.commands.run_config` reads the flags into a checked run configuration.
"""

from __future__ import annotations

import argparse
import os

from engine.prompts import SETTINGS

__all__ = ["add_arguments"]


def _utf8_text(value: str) -> str:
    """An argparse type for a flag that takes a name, a list or a URL, not a path: a byte of it
    that is not UTF-8 arrived as a lone surrogate, which the run met as a traceback when it
    hashed the run name or a model spec, or sent the URL."""
    try:
        os.fsencode(value).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not UTF-8 text (byte {exc.start})") from None
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = (
        "examples:\n"
        "  vaot run                                  # the embedded demo (no network, no keys)\n"
        "  vaot run --model openai:gpt-4o --api-key-env OPENAI_API_KEY --limit 50 \\\n"
        "           --store runs/gpt4o.lmdb       # the demo's dataset, 50 samples, own store\n"
        "  vaot run --model openai:Qwen/Qwen3-VL-8B --base-url http://127.0.0.1:8000/v1 \\\n"
        "           --dataset jsonl:data/val.jsonl --settings vaot,no_render\n"
        "Rerunning the same command resumes: finished trajectories are skipped, unfinished ones\n"
        "continue from their last committed step, and replies already committed are not asked\n"
        "again (calls in flight at a stop are). A run is its dataset and what the models are\n"
        "asked and shown: --dataset, --seed, --max-steps, --max-tokens, --cot-max-tokens,\n"
        "--temperature, --token-budget, --shape, --image-history and --render-base (or a\n"
        "--run-name); changing one starts a new run in the same store (said at its start);\n"
        "--limit, --concurrency, --workers and the like do not. Changing how a model's\n"
        "replies are read or what it is\n"
        "sent (--dialect, --convention, extra, detail) is refused for a run that has it: give the\n"
        "change a --run-name. A run is resumed only by the vaot engine version that recorded it.\n"
        "A trajectory that failed stays failed until a rerun with --retry-failed. A model\n"
        "that cannot be used (connection refused, key rejected, model not found, no credit\n"
        "left, or a request parameter it refuses, on 3 trajectories in a row before any call\n"
        "to it succeeded, or on 10 in a row later; before any success, a server that times\n"
        "out or errs on every attempt counts too) is stopped, without marking them failed,\n"
        "and the run goes on with the other models; one failing so a second time is recorded\n"
        "as failed. So is a model whose first 8 replies in a row (from 3 trajectories or more)\n"
        "all reach --max-tokens before any text (rerun with a higher --max-tokens), or all end\n"
        "with no text at all (check what its server returns). SIGTERM (kill, timeout, the end\n"
        "of a batch job) and SIGHUP (its terminal closed) stop a run as Ctrl-C does. The calls\n"
        "are driven by uvloop where it is installed; VAOT_EVENT_LOOP=asyncio picks asyncio's\n"
        "own event loop.\n"
        "Exit status: 0 all trajectories ended, 1 some failed or ended by an error, a model was\n"
        "stopped or the store failed, 2 bad input, 3 stopped at the --max-cost cap with\n"
        "trajectories left, 4 all ended but dataset rows were skipped at load (an image\n"
        "missing or unreadable, a bad field, a repeated id: fix it and rerun, or drop the\n"
        "row; with --dry-run, when rows would be), 130 interrupted, 143 terminated (SIGTERM),\n"
        "129 hung up (SIGHUP)."
    )
    p.add_argument("--config", metavar="FILE", help="TOML file with the run's options, named "
                   "as the flags below with underscores (max_steps = 5, settings = "
                   "[\"vaot\", \"cot\"] or \"vaot,cot\"), "
                   "except --timeout (call_timeout_s) and --retry-base-delay "
                   "(retry_base_delay_s), and the per-model flags below, which go in [[models]] "
                   "tables; it may also hold a price table (prices) and max_cost. Relative "
                   "paths in it (dataset, store) are read from the current folder, as a flag's "
                   "are (one missing there but found beside the file is refused, not made "
                   "anew). Flags override it. Models: models = [\"openai:M\"] or [[models]] tables with spec "
                   "and any of base_url, api_key_env, dialect, convention, max_concurrency, "
                   "requests_per_minute, tokens_per_minute, extra (fields added to each "
                   "request), native_tools, for OpenAI detail and max_tokens_field, and for "
                   "Anthropic prompt_cache")
    p.add_argument("--model", action="append", metavar="SPEC", dest="models", type=_utf8_text,
                   help="PROVIDER:MODEL, repeatable: reference:calibrated|ignore|overcall|blind, "
                   "openai:MODEL (any OpenAI-compatible server), gemini:MODEL, anthropic:MODEL, "
                   "scripted:NAME (replies from extra.script, or a built-in zoom-then-answer "
                   "script; offline), cassette:PROVIDER:MODEL (the replies --store recorded for "
                   "PROVIDER:MODEL, no network) (default: the four reference agents)")
    p.add_argument("--base-url", metavar="URL", type=_utf8_text,
                   help="API base URL for the API models, with the API's version path as in "
                   "the defaults (e.g. http://127.0.0.1:8000/v1; default: each provider's own, "
                   "https://api.openai.com/v1, https://generativelanguage.googleapis.com/v1beta, "
                   "https://api.anthropic.com/v1)")
    p.add_argument("--api-key-env", metavar="NAME", type=_utf8_text,
                   help="environment variable holding the API key (default OPENAI_API_KEY, "
                   "GEMINI_API_KEY or ANTHROPIC_API_KEY by provider; a model at another --base-url "
                   "gets no key unless this names one, so a key meant for the provider is never "
                   "sent elsewhere; its value is never logged)")
    p.add_argument("--dataset", metavar="SPEC",
                   help="synthetic[:N per family] | see2think:TASKS.json | jsonl:FILE "
                   "(default: synthetic, 20 samples in each of its 7 families)")
    p.add_argument("--settings", metavar="LIST", type=_utf8_text,
                   help=f"comma-separated subset of {','.join(SETTINGS)} (default: all four; "
                   "given twice, the last counts, as for every flag but --model)")
    p.add_argument("--store", metavar="PATH", help="the event store (default: runs/demo.lmdb); "
                   "structured logs go beside it, in PATH without .lmdb + .log. Folders of "
                   "PATH that do not exist are made, and a note names the first of them (the "
                   "default's runs/ is made without one)")
    p.add_argument("--limit", type=int, metavar="N",
                   help="use only the first N samples (default: all); synthetic samples "
                   "come one of each family in turn, so any N is spread over the families")
    p.add_argument("--concurrency", type=int, metavar="N",
                   help="trajectories in flight (default 64), shared evenly by the models "
                   "while each has work (a slow model does not take a fast one's slots); a "
                   "model with max_concurrency C holds at most 2C, and has at most C calls in flight (without "
                   "it, as many as the slots it holds)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="processes to spread the run over (default 1); each runs its own event "
                   "loop, render threads and store writer on every N-th sample, with 1/N of the "
                   "concurrency and endpoint limits. Use 2 or more when one core is the "
                   "bottleneck (heavy rendering, very fast endpoints); resuming works with any N")
    p.add_argument("--max-steps", type=int, metavar="N",
                   help="model calls per trajectory before it ends as max_steps (default 10)")
    p.add_argument("--max-tokens", type=int, metavar="N", help="output tokens per call (default 2048)")
    p.add_argument("--cot-max-tokens", type=int, metavar="N",
                   help="output tokens of the cot setting's one call, which writes the whole "
                   "solution (default: --max-tokens, one step's worth; the other settings make "
                   "up to --max-steps calls of --max-tokens). Part of the run's identity; refused when "
                   "--settings has no cot")
    p.add_argument("--token-budget", type=int, metavar="N",
                   help="tokens (input + output, as the API reports them) one trajectory may "
                   "spend; once its recorded steps reach it, it asks nothing more and ends as "
                   "max_steps (the call that crosses it is kept). Default: no budget")
    p.add_argument("--max-cost", type=float, metavar="AMOUNT",
                   help="what the replies of the trajectories this command runs may cost (in "
                   "the price table's unit, printed as USD; counting those paid for by earlier "
                   "invocations). A model call starts only if what it is expected to cost (the "
                   "most one reply of its model has cost so far; until its first reply, a model "
                   "makes at most three calls at once) still fits beside what was spent and what the calls in flight may "
                   "cost, so the total stays under AMOUNT unless a reply costs more than "
                   "expected. The trajectories left stay unfinished: raise it and rerun the "
                   "same command to go on. Needs the config file's prices for every API model. "
                   "Default: no cap")
    p.add_argument("--temperature", type=float, metavar="T", help="sampling temperature (default: each API's own)")
    p.add_argument("--seed", type=int, metavar="N", help="run seed (default 0): draws the synthetic samples and seeds the "
                   "renders' jitter and the wrong_render corruptions (it is not sent to the "
                   "APIs)")
    p.add_argument("--epochs", type=int, metavar="N", help="repeats of every trajectory (default 1); not part of the run's identity: "
                   "a rerun with more adds the new repeats to the same run")
    p.add_argument("--shape", choices=("see2think", "chat"),
                   help="conversation shape (default see2think: one user message per step "
                   "with the earlier steps' text and images; chat: alternating turns, each "
                   "reply an assistant turn and each rendered image a user turn)")
    p.add_argument("--image-history", metavar="H", type=_utf8_text,
                   help="which images each call is sent: 'all' (default) or "
                   "'original+last:K' (the original image and the last K rendered ones)")
    p.add_argument("--render-base", choices=("current", "original"),
                   help="draw on the current canvas (default) or always on the original image")
    p.add_argument("--convention", choices=("xyxy", "yxyx"),
                   help="box coordinate order the API models write (default xyxy; the "
                   "reference agents keep their own, and a run of them alone refuses it)")
    p.add_argument("--dialect", metavar="D", type=_utf8_text,
                   help="action dialect of the API models: vaot (default), deepeyes, qwen3vl, "
                   "minio3, openai (the reference agents keep their own, and a run of them "
                   "alone refuses it)")
    p.add_argument("--timeout", type=float, metavar="S", help="per-call timeout in seconds, connect to last byte "
                   "(default 300)")
    p.add_argument("--max-attempts", type=int, metavar="N",
                   help="attempts per model call before the trajectory fails (default 6)")
    p.add_argument("--retry-base-delay", type=float, metavar="S",
                   help="first backoff after a transient fault, in seconds (default 1.0), "
                   "doubling each time up to 60 s, each wait drawn between half and all of it, "
                   "twice as long after a 429; a server's Retry-After is waited instead, and one "
                   "over 600 s fails the call")
    p.add_argument("--run-name", metavar="NAME", type=_utf8_text,
                   help="name the run explicitly (default: derived from the options)")
    p.add_argument("--prompt-cache", action="store_true",
                   help="ask the anthropic models to cache each request's repeated prefix (the "
                   "original image, the conversation so far; with --image-history "
                   "original+last:K what comes before the images shown): a cache read is "
                   "billed at about a tenth of the input rate, a write at 1.25 times it, so a "
                   "trajectory's later calls save what its first pays (cot makes one call: it "
                   "pays the writes with nothing to read them back). OpenAI and Gemini cache "
                   "long prompts on their own. The summary counts reads and writes; give the "
                   "price table's entry cached_input_per_mtok to see the saving (else reads "
                   "are priced as input) and optionally cache_write_per_mtok. Not part of the "
                   "run's identity. Config: prompt_cache = true in a [[models]] table")
    p.add_argument("--native-tools", action="store_true",
                   help="declare the visual_action tool in each request (function calling) "
                   "and ask the API models to call it rather than write the action in their "
                   "text; each call is answered by its result and the rendered image. Needs "
                   "--dialect openai (which reads native calls); for openai, anthropic and "
                   "gemini models (not the reference agents). Fixed for a run: its requests "
                   "(and their hashes) carry the declaration, and a rerun that turns it on or "
                   "off is refused (start another with --run-name). Config: native_tools = "
                   "true in a [[models]] table")
    p.add_argument("--retry-failed", action="store_true",
                   help="run again the trajectories that ended failed in an earlier invocation "
                   "(say, after fixing a base URL or a key); their failure stays in the log")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bars: neither the bars per setting nor the line that "
                   "counts the dataset's rows while it loads")
    p.add_argument("--dry-run", action="store_true",
                   help="check the options, dataset and keys, then print what the run would "
                   "do and exit: its id, how far the store already got with it, each model's "
                   "endpoint and reading, the most calls per setting, and the first request "
                   "of each setting as the model would read it (images as placeholders). No "
                   "model is called and nothing is written. Exit status 0, 2 for what the run "
                   "would refuse, 4 when dataset rows would be skipped (listed)")
