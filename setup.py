"""The compiled parts of the package, in C: the simulation's passes (_simcore.c), the port
bound's max flow (_portflow.c), the loop-carried chains and critical path (_chains.c), all
in pmpredict/predict/. Everything else is in pyproject.toml.

The extensions are optional: where no C compiler is found the install goes on without them;
the simulation runs compiled by numba, or as plain Python, and the others as plain Python."""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Build the extension where a compiler exists; say so and go on where it does not."""

    def run(self):
        try:
            super().run()
        except Exception as exc:                  # noqa: BLE001 (any failure to build)
            print(f"pmpredict: the C simulation was not built ({exc}); numba stands in")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:                  # noqa: BLE001
            print(f"pmpredict: {ext.name} was not built ({exc}); numba stands in")


# the same IEEE arithmetic as the Python code: no fused multiply-add, no fast-math
EXACT = ["-O2", "-ffp-contract=off", "-fno-fast-math"]

setup(
    ext_modules=[Extension(f"pmpredict.predict.{name}", [f"pmpredict/predict/{name}.c"],
                           extra_compile_args=EXACT)
                 for name in ("_simcore", "_portflow", "_chains")],
    cmdclass={"build_ext": OptionalBuildExt},
)
