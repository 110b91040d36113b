"""CustomResourceDefinitions (``k8s.io/apiextensions-apiserver``)."""
