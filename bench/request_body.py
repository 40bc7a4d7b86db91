"""What a request body costs the event loop when it re-sends a trajectory's images.

A step-k request in the see2think shape with image history ``all`` carries the original and the
k-1 images returned so far, and every one of them went through the JSON encoder again on each
call. ``adapters/models/json_strings.py`` makes each image's JSON string once; this prints, per
provider, the loop's time to build and encode one body both ways, for photo-sized images (the
synthetic benchmark's PNGs are ~25 kB, real photos a few hundred kB) and the ratio.

    python bench/request_body.py [--image-kb 400] [--steps 8] [--repeat 300]
"""

from __future__ import annotations

import argparse
import base64
import os
import time

import msgspec

import adapters.models.anthropic as anthropic_module
import adapters.models.gemini as gemini_module
import adapters.models.openai as openai_module
from adapters.models.base import AdapterOptions, ImagePart
from engine.conversation import HistoryStep, RequestSpec, build_request

MODULES = {"openai": openai_module, "gemini": gemini_module, "anthropic": anthropic_module}


def _fresh(text: str, prefix: str = "") -> str:
    """The body as it was built before: the image's string put in as is, encoded every time."""
    return prefix + text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image-kb", type=int, default=400, help="size of each encoded image")
    parser.add_argument("--steps", type=int, default=8, help="the request's step (k-1 images "
                        "returned before it, plus the original)")
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()

    images = {f"{i:064x}": ImagePart(sha=f"{i:064x}", b64=base64.b64encode(
        os.urandom(args.image_kb * 1000)).decode()) for i in range(args.steps)}
    keys = list(images)
    history = [HistoryStep(step, f"Step {step} (Text): zoom in.", True, keys[step])
               for step in range(1, args.steps)]
    request = build_request(
        setting="vaot", question="Which bar is the longest?", choices=(), original_state=keys[0],
        history=history, step=args.steps, max_steps=10, spec=RequestSpec(),
        image=images.__getitem__)
    encoder = msgspec.json.Encoder()
    print(f"a step-{args.steps} request: {args.steps} images of {args.image_kb} kB "
          f"({args.image_kb * 4 // 3} kB as base64), {args.repeat} bodies each way, CPU time of "
          "this thread")
    for name, module in MODULES.items():
        adapter = module.create("bench", AdapterOptions(base_url="http://127.0.0.1:1"))
        timings = {}
        for how, swap in (("each time", _fresh), ("made once", None)):
            saved = module.json_string
            if swap is not None:
                module.json_string = swap
            try:
                size = len(encoder.encode(adapter.build_body(request)))  # warm: strings made
                t0 = time.thread_time()
                for _ in range(args.repeat):
                    encoder.encode(adapter.build_body(request))
                timings[how] = (time.thread_time() - t0) / args.repeat
            finally:
                module.json_string = saved
        print(f"{name:9s} body {size / 1e6:5.2f} MB: images encoded each time "
              f"{1e6 * timings['each time']:7.0f} µs, made once {1e6 * timings['made once']:6.0f} µs"
              f" per body: ratio {timings['made once'] / timings['each time']:.2f}")


if __name__ == "__main__":
    main()
