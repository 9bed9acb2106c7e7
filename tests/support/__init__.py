"""What tests share: the checkout's paths, recipe files on this python, watching a run
from outside, a real git history with a wheel per commit, and triage's field scoring."""
