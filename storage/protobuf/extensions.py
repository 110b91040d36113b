"""The protobuf schema of the kinds Debian ships no ``generated.proto`` for:
``apiextensions.k8s.io/v1`` (CustomResourceDefinition) and ``apiregistration.k8s.io/v1``
(APIService), which client-go's clientsets, kube-controller-manager and Go operators
send and read as protobuf.

The ``.proto`` files under ``proto/`` are ours, with upstream's package, message names
and field numbers; they are compiled against the Debian schema's descriptors (for
ObjectMeta, Time, RawExtension, ...) into ``extensions-<hash>.binpb`` beside it, rebuilt
when the files change. ``GO_FACTS`` is what go-to-protobuf reads from the Go struct tags
and the ``.proto`` does not say (``storage.protobuf.gotypes``): per struct, each field as
``proto[=json][:flags]``, flags ``p`` (a Go pointer) and ``o`` (omitempty).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from storage.protobuf.errors import SchemaUnavailable
from storage.protobuf.gotypes import GoField

PROTO_ROOT = Path(__file__).resolve().parent / "proto"
_EXT = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
_REG = "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
GROUPS = {_EXT: "apiextensions.k8s.io", _REG: "apiregistration.k8s.io"}

# messages whose Go type has its own JSON form (apiextensions v1's marshal.go)
SPECIAL = {
    f"{_EXT.replace('/', '.').replace('-', '_')}.JSON": "raw",
    f"{_EXT.replace('/', '.').replace('-', '_')}.JSONSchemaPropsOrArray": "schema_or_array",
    f"{_EXT.replace('/', '.').replace('-', '_')}.JSONSchemaPropsOrBool": "schema_or_bool",
    f"{_EXT.replace('/', '.').replace('-', '_')}.JSONSchemaPropsOrStringArray": "schema_or_strings",
}

_OBJECT = "metadata:o spec:o status:o"
_CONDITION = "type status lastTransitionTime:o reason:o message:o"
GO_FACTS: dict[str, dict[str, str]] = {
    _EXT: {
        "ConversionRequest": "uid desiredAPIVersion objects",
        "ConversionResponse": "uid convertedObjects result",
        "ConversionReview": "request:po response:po",
        "CustomResourceColumnDefinition": "name type format:o description:o priority:o jsonPath",
        "CustomResourceConversion": "strategy webhook:po",
        "CustomResourceDefinition": "metadata:o spec status:o",
        "CustomResourceDefinitionCondition": _CONDITION,
        "CustomResourceDefinitionList": "metadata:o items",
        "CustomResourceDefinitionNames": "plural singular:o shortNames:o kind listKind:o "
        "categories:o",
        "CustomResourceDefinitionSpec": "group names scope versions conversion:po "
        "preserveUnknownFields:o",
        "CustomResourceDefinitionStatus": "conditions:o acceptedNames storedVersions",
        "CustomResourceDefinitionVersion": "name served storage schema:po subresources:po "
        "additionalPrinterColumns:o deprecated:o deprecationWarning:po selectableFields:o",
        "CustomResourceSubresourceScale": "specReplicasPath statusReplicasPath "
        "labelSelectorPath:po",
        "CustomResourceSubresources": "status:po scale:po",
        "CustomResourceValidation": "openAPIV3Schema:po",
        "ExternalDocumentation": "description:o url:o",
        "JSONSchemaProps": "id:o schema=$schema:o ref=$ref:po description:o type:o format:o "
        "title:o default:po maximum:po exclusiveMaximum:o minimum:po exclusiveMinimum:o "
        "maxLength:po minLength:po pattern:o maxItems:po minItems:po uniqueItems:o "
        "multipleOf:po enum:o maxProperties:po minProperties:po required:o items:po allOf:o "
        "oneOf:o anyOf:o not:po properties:o additionalProperties:po patternProperties:o "
        "dependencies:o additionalItems:po definitions:o externalDocs:po example:po "
        "nullable:o xKubernetesPreserveUnknownFields=x-kubernetes-preserve-unknown-fields:po "
        "xKubernetesEmbeddedResource=x-kubernetes-embedded-resource:o "
        "xKubernetesIntOrString=x-kubernetes-int-or-string:o "
        "xKubernetesListMapKeys=x-kubernetes-list-map-keys:o "
        "xKubernetesListType=x-kubernetes-list-type:po "
        "xKubernetesMapType=x-kubernetes-map-type:po "
        "xKubernetesValidations=x-kubernetes-validations:o",
        "JSONSchemaPropsOrArray": "schema:po jSONSchemas:o",
        "JSONSchemaPropsOrBool": "allows:o schema:po",
        "JSONSchemaPropsOrStringArray": "schema:po property:o",
        "SelectableField": "jsonPath",
        "ServiceReference": "namespace name path:po port:po",
        "ValidationRule": "rule message:o messageExpression:o reason:po fieldPath:o "
        "optionalOldSelf:po",
        "WebhookClientConfig": "service:po caBundle:o url:po",
        "WebhookConversion": "clientConfig:po conversionReviewVersions",
    },
    _REG: {
        "APIService": _OBJECT,
        "APIServiceCondition": _CONDITION,
        "APIServiceList": "metadata:o items",
        "APIServiceSpec": "service:po group:o version:o insecureSkipTLSVerify:o caBundle:o "
        "groupPriorityMinimum versionPriority",
        "APIServiceStatus": "conditions:o",
        "ServiceReference": "namespace:o name:o port:po",
    },
}


def _fields(spec: str) -> list[GoField]:
    out: list[GoField] = []
    for item in spec.split():
        names, _, flags = item.partition(":")
        proto, _, json = names.partition("=")
        out.append(GoField(proto=proto, json=json or proto, omitempty="o" in flags,
                           inline=False, pointer="p" in flags, go_type=""))  # fmt: skip
    return out


def packages() -> dict[str, Any]:
    """The ``schema.json`` ``packages`` entries of these protos (as ``schema._compile``
    writes for Debian's)."""
    return {
        go_dir.replace("/", ".").replace("-", "_"): {
            "dir": go_dir,
            "group": GROUPS[go_dir],
            "structs": {name: _fields(spec) for name, spec in structs.items()},
        }
        for go_dir, structs in GO_FACTS.items()
    }


def _protos() -> list[str]:
    return sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.glob("k8s.io/**/*.proto"))


def build(folder: Path) -> Path:
    """``folder/extensions-<hash>.binpb``, compiled against ``folder/descriptors.binpb``
    (the Debian schema) if not there yet; SchemaUnavailable when protoc fails."""
    protos = _protos()
    digest = hashlib.sha256()
    for rel in protos:
        digest.update(rel.encode() + b"\0" + (PROTO_ROOT / rel).read_bytes())
    target = folder / f"extensions-{digest.hexdigest()[:16]}.binpb"
    if target.exists():
        return target
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    args = [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_ROOT}",
            f"--descriptor_set_in={folder / 'descriptors.binpb'}",
            f"--descriptor_set_out={partial}", *protos]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SchemaUnavailable(f"protoc failed on {PROTO_ROOT}: {done.stderr.strip()[-500:]}")
    partial.replace(target)  # atomic: concurrent builders write the same bytes
    return target
