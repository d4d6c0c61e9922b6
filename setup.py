"""The one compiled part of the package: the simulation's passes in C
(pmpredict/predict/_simcore.c). Everything else is in pyproject.toml.

The extension is optional: where no C compiler is found the install goes on without it and
the simulation runs compiled by numba, or as plain Python (pmpredict.predict.engines)."""

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


setup(
    ext_modules=[Extension(
        "pmpredict.predict._simcore", ["pmpredict/predict/_simcore.c"],
        # the same IEEE arithmetic as the Python passes: no fused multiply-add, no fast-math
        extra_compile_args=["-O2", "-ffp-contract=off", "-fno-fast-math"])],
    cmdclass={"build_ext": OptionalBuildExt},
)
