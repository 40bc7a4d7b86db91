"""Settings for the whole suite."""

from hypothesis import settings

# Property tests check behaviour, never time: hypothesis's default 200 ms per example is a
# timed assertion, and on a shared two-core host an example of a JSON or reply parser sometimes
# takes longer (a rerun passes). Speed is the benchmarks' business (bench/).
settings.register_profile("vaot", deadline=None)
settings.load_profile("vaot")
