"""Readers of profiler output: torch profiler traces (:mod:`jsonstream`, :mod:`kineto`),
nsys SQLite exports (:mod:`nsys`) and py-spy output (:mod:`pyspy`) streamed into a
:mod:`timeline` (with :mod:`ops`, :mod:`spans`, :mod:`phases`, kernel names from
:mod:`cxxnames` grouped by :mod:`families`); :mod:`leg` merges one side's files."""
