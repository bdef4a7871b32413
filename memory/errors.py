"""Domain errors. Operations raise these; the API maps each to its status once
(memoryproject.api.exception_handler), the pages turn them into messages."""


class DomainError(Exception):
    status_code = 400
    code = "error"

    def __init__(self, message: str, **extra: object) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra


class InvalidInput(DomainError):
    """Malformed name or field (SPEC §17): 422, nothing written."""

    status_code = 422
    code = "invalid"


class PathRefused(InvalidInput):
    """A path that is not a memory file, or that escapes the workspace."""

    code = "path_refused"


class NotFound(DomainError):
    status_code = 404
    code = "not_found"


class Conflict(DomainError):
    """Decided twice, stale base, undo after a later change, a run already running: 409."""

    status_code = 409
    code = "conflict"


class Forbidden(DomainError):
    status_code = 403
    code = "forbidden"


class DiskFull(DomainError):
    """The workspace's disk (or quota) is full: nothing was written (507)."""

    status_code = 507
    code = "disk_full"


class WorkspaceReadOnly(DomainError):
    """The workspace cannot take writes (a read-only mount, no permission): nothing was
    written, reads still work (503)."""

    status_code = 503
    code = "read_only"


class WorkspaceBusy(DomainError):
    """A file lock could not be had in time: nothing was written; try again (503)."""

    status_code = 503
    code = "busy"
