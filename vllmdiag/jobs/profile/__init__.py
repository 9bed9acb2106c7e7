"""Profiles of one workload on two sides, and the diff that says where the time went.

Reading: :mod:`jsonstream` and :mod:`kineto` (torch profiler traces), :mod:`nsys`
(SQLite exports) and :mod:`pyspy` stream a capture into a :mod:`timeline`, which keeps a
few numbers per GPU activity, joins each to the op that launched it (:mod:`ops`) and
refuses bad events by reason; :mod:`spans` does its interval arithmetic and
:mod:`phases` reads vLLM's step names; :mod:`cxxnames` and :mod:`families` name and
group kernels. :mod:`leg` merges a side's files.

Comparing: :mod:`diff` (pure) with :mod:`pairing` (kernel and op rows) and
:mod:`reconcile` (warnings and the paragraph); :mod:`report` is what ``diff.json`` and
``--json`` hold; :mod:`render` writes ``summary.md`` and a picture.

Capturing: :mod:`capture` says how a backend runs a workload (vLLM's own profiler
switched on through :mod:`vllm_probe` / :mod:`vllm_flags`), :mod:`executor` runs it as a
cell; :mod:`sides` takes a recipe's two sides from the plan layer, :mod:`recipe_run`
runs them through the cell runner, :mod:`run` captures on existing environments without
a recipe. Both emit :mod:`events` into the run directory's ``run.jsonl`` and write
:mod:`results` (``profile.json``); :mod:`job` holds the diffs the CLI calls.
"""
