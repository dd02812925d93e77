#!/usr/bin/env bash
# Build llama.cpp's llama-bench, llama-server and llama-quantize for a GPU backend, to compare with Kinetic's device
# on the same files (scripts/bench_gpu.py --llama-bench, scripts/conformance.py --device cuda):
# cuda for Hopper (sm_90), or vulkan (needs glslc and the Vulkan headers and loader).
#
#   scripts/build_llamacpp_gpu.sh cuda|vulkan SOURCE BUILD_DIR [JOBS] [CMAKE OPTIONS...]
#
# SOURCE is llama.cpp's source folder or a .tar.xz of it. With cuda, where the CUDA toolkit has no cuBLAS, the one in
# Python's nvidia-cublas wheel is used; the folder it was found in is written to BUILD_DIR/ld_library_path. Options
# after JOBS go to cmake (Vulkan_INCLUDE_DIR, Vulkan_LIBRARY, Vulkan_GLSLC_EXECUTABLE for an SDK outside /usr).
set -euo pipefail
backend=$1
source=$2
build=$3
jobs=${4:-$(nproc)}
shift $(( $# < 4 ? $# : 4 ))
mkdir -p "$build"
if [ -f "$source" ]; then
    mkdir -p "$build/source"
    tar -xJf "$source" -C "$build/source"
    source=$build/source
fi
options=(-DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
         -DCMAKE_BUILD_TYPE=Release "$@")
if [ "$backend" = vulkan ]; then
    options+=(-DGGML_VULKAN=ON)
else
    options+=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90)
    if ! ls /usr/local/cuda/lib64/libcublas.so* >/dev/null 2>&1; then
        lib=$(python3 -c 'import nvidia.cu13, os; print(os.path.join(nvidia.cu13.__path__[0], "lib"))')
        ln -sf "$lib/libcublas.so.13" "$build/libcublas.so"
        ln -sf "$lib/libcublasLt.so.13" "$build/libcublasLt.so"
        options+=(-DCUDA_cublas_LIBRARY="$build/libcublas.so" -DCUDA_cublasLt_LIBRARY="$build/libcublasLt.so"
                  -DCMAKE_CUDA_FLAGS="-I$lib/../include" -DCMAKE_CXX_FLAGS="-I$lib/../include")
        echo "$lib" > "$build/ld_library_path"
    fi
fi
generator=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
cmake -S "$source" -B "$build/build" -G "$generator" "${options[@]}" >"$build/cmake.log"
cmake --build "$build/build" -j "$jobs" --target llama-bench llama-server llama-quantize >"$build/build.log"
echo "built $build/build/bin/llama-bench, llama-server and llama-quantize ($backend)"
