"""The registry (k8s.io/apiserver/pkg/registry): the resource catalogue, storage per
resource, object meta rules, validation, dry-run and subresources."""
