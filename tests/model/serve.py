"""Start llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`, same
arguments) with llama.cpp's extra CPU buffer types turned off.

Those buffer types (AMX tiles, repacked weights) are chosen by the CPU's flags: on a CPU
that advertises AMX, llama.cpp 0.3.36's AMX matmul dies on the first completion (SIGILL
under this machine's hypervisor, SIGSEGV on others) although the model loads. llama.cpp's
own server has a switch for it (`--no-repack`); llama-cpp-python's does not expose
`llama_model_params.use_extra_bufts`, so the default parameters it starts from are set
here. Plain CPU kernels are what every x86-64 machine runs the same way.
"""

from __future__ import annotations

import llama_cpp.llama_cpp as llama_cpp_raw
from llama_cpp.server.__main__ import main

_defaults = llama_cpp_raw.llama_model_default_params


def _defaults_without_extra_buffer_types():
    params = _defaults()
    params.use_extra_bufts = False
    return params


if __name__ == "__main__":
    llama_cpp_raw.llama_model_default_params = _defaults_without_extra_buffer_types
    main()
