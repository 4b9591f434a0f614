"""A plain C extension that encodes with bbpe through its capsule API (bbpe.h).

    pip install --no-build-isolation ./examples/c_consumer          # with bbpe installed
"""

from setuptools import Extension, setup

import bbpe

setup(
    name="bbpe-c-demo",
    version="0.1",
    ext_modules=[Extension("bbpe_c_demo", ["bbpe_c_demo.c"], include_dirs=[bbpe.get_include()])],
)
