"""Kind-independent validation (``k8s.io/apimachinery/pkg/util/validation`` and
``pkg/api/validation``): field errors and the 422 they make (``field``), bad values as
Go prints them (``go_values``), names (``names``), ObjectMeta (``object_meta``)."""
