"""The strategic merge patch (apimachinery's ``strategicpatch``), over the kinds'
schemas; the PATCH handler's dispatch by media type, JSON patch and merge patch are
beside the handlers (``proxy.endpoints.handlers.patcher``, upstream's
``handlers/patch.go``)."""
