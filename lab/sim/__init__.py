"""A simulated cluster for the lab, in the spirit of KWOK: node agents, a scheduler and
controllers that are ordinary API clients (kubernetes-asyncio, LIST ``resourceVersion=0``
+ WATCH informers, their own user agents), one module each. See :mod:`lab.sim.cluster`."""
