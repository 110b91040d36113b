"""Wiring of auditing into the server (upstream's ``AuditOptions``): from
``--audit-policy-file`` and ``--audit-log-*``, the policy, the log backend and its
writer task, the filter and its response hook. No policy file or no log path: no
auditing (as upstream, which needs both to write a log)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Middleware

from proxy.apimachinery.wait import SupervisedTask
from proxy.audit import filter as audit_filter
from proxy.audit.log_backend import LogBackend
from proxy.audit.policy import Policy, PolicyError, load_policy
from proxy.authentication.filter import FailedHandler, answer_unauthorized
from proxy.server.settings import ConfigError, Settings

__all__ = ["Audit"]


@dataclass
class Audit:
    policy: Policy
    backend: LogBackend

    @classmethod
    def build(cls, settings: Settings) -> Audit | None:
        """None without ``--audit-policy-file`` and ``--audit-log-path``; ConfigError
        for a bad policy or format."""
        if not settings.audit_policy_file or not settings.audit_log_path:
            return None
        if settings.audit_log_format != "json":
            raise ConfigError(f'--audit-log-format: "{settings.audit_log_format}" is not '
                              'supported (only "json")')  # fmt: skip
        try:
            policy = load_policy(settings.audit_policy_file)
        except PolicyError as e:
            raise ConfigError(str(e)) from None
        backend = LogBackend(settings.audit_log_path, settings.audit_log_maxsize,
                             settings.audit_log_maxbackup, settings.audit_log_maxage)  # fmt: skip
        return cls(policy, backend)

    def middleware(self) -> Middleware:
        return audit_filter.audit_middleware(self.policy, self.backend.process)

    def failed_authentication(self) -> FailedHandler:
        """The 401 of a failed authentication, audited."""
        return audit_filter.failed_authentication_audit(
            answer_unauthorized, self.policy, self.backend.process
        )

    def install(self, app: web.Application) -> None:
        """The response hook and the writer task (cancelled, after a flush, at cleanup)."""
        app.on_response_prepare.append(audit_filter.on_response_prepare)

        async def run(app: web.Application) -> AsyncIterator[None]:
            # from start-up, not after listening: it drains what requests buffer
            writer = SupervisedTask("audit-log-writer", self.backend.run)
            writer.start()
            yield
            await writer.stop()

        app.cleanup_ctx.append(run)
