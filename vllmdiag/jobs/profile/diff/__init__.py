"""Where the time went between two captures: pure arithmetic over two sides' profiles
(:mod:`time_diff`, :mod:`pairing`, :mod:`reconcile`, :mod:`steptimes`), what a diff
holds (:mod:`report`) and writes (:mod:`render`), and two captures diffed
(:mod:`captures`). It reads traces through :mod:`vllmdiag.readers.traces` and never
imports the capture job."""
