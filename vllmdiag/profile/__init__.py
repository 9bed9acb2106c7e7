"""Profiles of one workload on two legs, and the diff that says where the time went.

Readers (:mod:`kineto`, :mod:`nsys`, :mod:`pyspy`) stream a capture into aggregates;
:mod:`leg` merges a leg's files; :mod:`diff` compares two legs (pure); :mod:`render`
writes ``summary.md`` and a picture; :mod:`capture` runs the captures.
"""
