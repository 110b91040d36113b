"""The resource handlers (k8s.io/apiserver/pkg/endpoints/handlers): dispatch by verb,
single objects, collections and watches, and the options each verb reads."""
