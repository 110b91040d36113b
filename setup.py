"""The C extension (the protobuf decoder, storage/protobuf/_cdecode.c); everything else
is in pyproject.toml. It needs a C compiler and Python's headers (the Docker image
installs gcc for the build). Without them the install still succeeds (optional) and the
Python decoder serves: the server logs it, /debug/watchcache shows it, and the unit test
tests/unit/storage/test_protobuf_native.py fails, so CI cannot fall back silently."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "storage.protobuf._cdecode",
            sources=["storage/protobuf/_cdecode.c"],
            optional=True,
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers"],
        )
    ]
)
