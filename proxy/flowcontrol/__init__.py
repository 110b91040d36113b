"""API Priority and Fairness (upstream's ``k8s.io/apiserver/pkg/util/flowcontrol``):
FlowSchemas classify each request into a priority level, whose queue set dispatches it
fairly (shuffle sharding, fair queuing in virtual time) within its seats. See
``docs/apf.md``."""
