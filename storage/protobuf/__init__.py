"""Kubernetes protobuf (``k8s\\x00`` + ``runtime.Unknown``): the schema (``schema``, from
Debian's k8s.io/api packages, built into a cache), the Go facts it needs (``gotypes``),
per-message plans (``plans``), the JSON ⇄ wire rules (``converter``, the reference) and
their generated fast form (``codegen``), wire primitives (``wire``), and the envelope and
front object (``serializer``)."""
