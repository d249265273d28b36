"""The one scheduling core: kube-scheduler's framework and in-tree plugins, reproduced (R4, R5, R9, R11).

``explain``, ``schedule``, ``diagnose``, the simulator and the live scheduler all run pods through
``kubegpu.scheduler.schedule_one``; no other package decides feasibility. ``assembly`` is the one place a
scheduler is built, from a declared ``SchedulerSpec`` (``tests/test_assembly.py`` holds every face to it).
Must not import ``kubernetes``, ``grpc``, ``pynvml``, ``click`` or ``rich``.

Layer (``.importlinter``, checked by ``lint-imports`` in CI): core, above ``devices`` and ``admission``;
never imports ``batch``, ``explain``, the node agent, a face, or ``kubegpu.kube``, ``kubernetes``, ``grpc``,
``prometheus_client`` or ``pynvml``.
"""
