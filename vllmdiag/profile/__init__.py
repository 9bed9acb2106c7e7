"""Profiles of one workload on two sides, and the diff that says where the time went.

Reading: :mod:`jsonstream` and :mod:`kineto` (torch profiler traces), :mod:`nsys`
(SQLite exports) and :mod:`pyspy` stream a capture into a :mod:`timeline`, which keeps a
few numbers per GPU activity, joins each to the op that launched it (:mod:`ops`) and
refuses bad events by reason; :mod:`spans` does its interval arithmetic and
:mod:`phases` reads vLLM's step names; :mod:`cxxnames` and :mod:`families` name and
group kernels. :mod:`leg` merges a side's files.

Comparing: :mod:`diff` (pure) with :mod:`pairing` (kernel and op rows) and
:mod:`reconcile` (warnings and the paragraph); :mod:`render` writes ``summary.md`` and a
picture.

Capturing: :mod:`capture` runs one side under a backend (vLLM's own profiler switched
on through :mod:`vllm_probe` / :mod:`vllm_flags`), :mod:`run` runs the sides into a run
directory, :mod:`sides` and :mod:`recipe_run` take them from a recipe. :mod:`job` holds
the jobs the CLI calls.
"""
