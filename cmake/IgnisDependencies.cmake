# Finds Ignis's dependencies. Required: OpenMP, fmt, OpenBLAS, zlib (gzip data files), libpng
# and libjpeg(-turbo) (read_image). Optional, each switching its
# feature off with one status line when absent: CUDA (+cuBLASLt; cuDNN when present), oneDNN, MPI, and
# Debian's python3-torch for the reference tests.

find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)  # the data readers inflate gzip files (MNIST .gz)
find_package(PNG REQUIRED)   # read_image: PNG (libpng-dev)
find_package(JPEG REQUIRED)  # read_image: JPEG (libjpeg62-turbo-dev)
find_package(nlohmann_json 3 REQUIRED)  # safetensors headers (header-only, linked PRIVATE)

# --- OpenBLAS, preferring the OpenMP build so BLAS shares our thread pool -----------------
set(_ignis_blas_hints
    /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
    /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-pthread)
set(_ignis_blas_inc_hints
    /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
    /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-pthread
    /usr/include/openblas)
find_library(IGNIS_OPENBLAS_LIBRARY NAMES openblas HINTS ${_ignis_blas_hints})
find_path(IGNIS_OPENBLAS_INCLUDE_DIR NAMES cblas.h HINTS ${_ignis_blas_inc_hints})
if(NOT IGNIS_OPENBLAS_LIBRARY OR NOT IGNIS_OPENBLAS_INCLUDE_DIR)
  message(FATAL_ERROR "OpenBLAS not found: install libopenblas-openmp-dev (scripts/setup.sh does)")
endif()
add_library(ignis_openblas INTERFACE)
target_link_libraries(ignis_openblas INTERFACE ${IGNIS_OPENBLAS_LIBRARY})
target_include_directories(ignis_openblas SYSTEM INTERFACE ${IGNIS_OPENBLAS_INCLUDE_DIR})
set(IGNIS_OPENBLAS_STATUS "${IGNIS_OPENBLAS_LIBRARY}")

# --- oneDNN (optional; convolution/pooling/norm on the CPU) ---------------------------------
find_library(IGNIS_DNNL_LIBRARY NAMES dnnl)
find_path(IGNIS_DNNL_INCLUDE_DIR NAMES dnnl.hpp)
if(IGNIS_DNNL_LIBRARY AND IGNIS_DNNL_INCLUDE_DIR)
  set(IGNIS_HAVE_DNNL ON)
  set(IGNIS_DNNL_STATUS "ON (${IGNIS_DNNL_LIBRARY})")
else()
  set(IGNIS_HAVE_DNNL OFF)
  set(IGNIS_DNNL_STATUS "OFF (libdnnl-dev not found)")
endif()

# --- MPI (optional; distributed training on the CPU) ---------------------------------------
# IGNIS_DISTRIBUTED builds ignis::distributed's MPI backend; without it init() throws a
# clear "built without MPI" error and everything else builds unchanged.
find_package(MPI QUIET COMPONENTS CXX)
option(IGNIS_DISTRIBUTED "Build the MPI backend of ignis::distributed (needs Open MPI)"
       ${MPI_CXX_FOUND})
if(IGNIS_DISTRIBUTED AND NOT MPI_CXX_FOUND)
  message(FATAL_ERROR "IGNIS_DISTRIBUTED=ON but MPI was not found: install libopenmpi-dev")
endif()
if(IGNIS_DISTRIBUTED)
  find_program(IGNIS_MPIEXEC NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
  set(IGNIS_MPI_STATUS "ON (IGNIS_DISTRIBUTED, MPI ${MPI_CXX_VERSION}, ${IGNIS_MPIEXEC})")
elseif(MPI_CXX_FOUND)
  set(IGNIS_MPI_STATUS "OFF (IGNIS_DISTRIBUTED=OFF)")
else()
  set(IGNIS_MPI_STATUS "OFF (libopenmpi-dev not found)")
endif()

# --- CUDA (optional) -------------------------------------------------------------------------
set(IGNIS_HAVE_CUDA OFF)
set(IGNIS_HAVE_NCCL OFF)
if(NOT IGNIS_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES ${IGNIS_CUDA_ARCHS})
    endif()
    enable_language(CUDA)
    # CMake 3.25 does not know how to ask nvcc 13 for C++20 (it derives CUDA_STANDARD 20
    # from CXX_STANDARD and then fails); tell it the flag.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    find_package(CUDAToolkit)
    # cuBLASLt: with the toolkit, or inside a Python wheel (nvidia-cublas, IGNIS_CUBLAS_ROOT)
    # on GPU machines whose toolkit has only the compiler and runtime.
    if(CUDAToolkit_FOUND AND NOT TARGET CUDA::cublasLt AND IGNIS_CUBLAS_ROOT)
      find_library(IGNIS_CUBLASLT_LIBRARY NAMES cublasLt libcublasLt.so.13 libcublasLt.so.12
                   HINTS ${IGNIS_CUBLAS_ROOT}/lib NO_DEFAULT_PATH)
      find_path(IGNIS_CUBLAS_INCLUDE_DIR NAMES cublasLt.h HINTS ${IGNIS_CUBLAS_ROOT}/include
                NO_DEFAULT_PATH)
      if(IGNIS_CUBLASLT_LIBRARY AND IGNIS_CUBLAS_INCLUDE_DIR)
        add_library(CUDA::cublasLt SHARED IMPORTED GLOBAL)
        set_target_properties(CUDA::cublasLt PROPERTIES
          IMPORTED_LOCATION ${IGNIS_CUBLASLT_LIBRARY}
          INTERFACE_INCLUDE_DIRECTORIES ${IGNIS_CUBLAS_INCLUDE_DIR})
      endif()
    endif()
    # cuDNN: with the toolkit, or inside a Python wheel (nvidia-cudnn) on GPU machines.
    find_library(IGNIS_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
                 HINTS ${CUDAToolkit_LIBRARY_DIR} ${IGNIS_CUDNN_ROOT}/lib
                 PATH_SUFFIXES lib64 lib)
    find_path(IGNIS_CUDNN_INCLUDE_DIR NAMES cudnn.h
              HINTS ${CUDAToolkit_INCLUDE_DIRS} ${IGNIS_CUDNN_ROOT}/include)
    # cuDNN runs the GPU convolutions (src/cuda/cudnn_conv.cpp). Without it (IGNIS_CUDNN=OFF,
    # or AUTO and not found) the backend still builds; conv2d on CUDA then raises
    # NotImplementedError saying so. IGNIS_CUDNN=ON makes a missing cuDNN a configure error.
    if(IGNIS_CUDNN STREQUAL "OFF")
      set(IGNIS_HAVE_CUDNN OFF)
      set(_ignis_cudnn "cuDNN off (IGNIS_CUDNN=OFF): no GPU convolutions")
    elseif(IGNIS_CUDNN_LIBRARY AND IGNIS_CUDNN_INCLUDE_DIR)
      set(IGNIS_HAVE_CUDNN ON)
      set(_ignis_cudnn "cuDNN ${IGNIS_CUDNN_LIBRARY}")
    elseif(IGNIS_CUDNN STREQUAL "ON")
      message(FATAL_ERROR "IGNIS_CUDNN=ON but cuDNN (cudnn.h, libcudnn) was not found; "
                          "set IGNIS_CUDNN_ROOT to its prefix, or IGNIS_CUDNN=AUTO/OFF")
    else()
      set(IGNIS_HAVE_CUDNN OFF)
      set(_ignis_cudnn "no cuDNN: no GPU convolutions (set IGNIS_CUDNN_ROOT)")
    endif()
    if(CUDAToolkit_FOUND AND TARGET CUDA::cublasLt)
      set(IGNIS_HAVE_CUDA ON)
      # NCCL (GPU collectives of ignis::distributed): with the toolkit, or inside a Python
      # wheel (nvidia-nccl, whose library is only libnccl.so.2) on GPU machines.
      # NAMES_PER_DIR: the wheel's libnccl.so.2 before a system libnccl.so elsewhere, so the
      # library comes from the same place as the header.
      find_library(IGNIS_NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR
                   HINTS ${CUDAToolkit_LIBRARY_DIR} ${IGNIS_NCCL_ROOT}/lib)
      find_path(IGNIS_NCCL_INCLUDE_DIR NAMES nccl.h
                HINTS ${CUDAToolkit_INCLUDE_DIRS} ${IGNIS_NCCL_ROOT}/include)
      if(IGNIS_NCCL_LIBRARY AND IGNIS_NCCL_INCLUDE_DIR)
        set(IGNIS_HAVE_NCCL ON)
      endif()
      set(IGNIS_CUDA_STATUS "ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, arch ${CMAKE_CUDA_ARCHITECTURES}, ${_ignis_cudnn})")
    else()
      set(IGNIS_CUDA_STATUS "OFF (CUDA toolkit found but cuBLASLt missing)")
    endif()
  else()
    set(IGNIS_CUDA_STATUS "OFF (no CUDA compiler found)")
  endif()
  if(IGNIS_CUDA STREQUAL "ON" AND NOT IGNIS_HAVE_CUDA)
    message(FATAL_ERROR "IGNIS_CUDA=ON but the CUDA backend cannot be built: ${IGNIS_CUDA_STATUS}")
  endif()
else()
  set(IGNIS_CUDA_STATUS "OFF (IGNIS_CUDA=OFF)")
endif()

# --- Python with PyTorch, the oracle of the reference tests ---------------------------------
# Debian's python3-torch lives under the system interpreter, which may not be the first
# python3 on PATH; prefer it.
find_program(IGNIS_PYTHON NAMES python3 HINTS /usr/bin NO_DEFAULT_PATH)
if(NOT IGNIS_PYTHON)
  find_program(IGNIS_PYTHON NAMES python3)
endif()
set(IGNIS_HAVE_TORCH OFF)
if(IGNIS_PYTHON)
  execute_process(COMMAND ${IGNIS_PYTHON} -c "import torch, numpy; print(torch.__version__)"
                  OUTPUT_VARIABLE _ignis_torch_version RESULT_VARIABLE _ignis_torch_rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_ignis_torch_rc EQUAL 0)
    set(IGNIS_HAVE_TORCH ON)
    set(IGNIS_TORCH_STATUS "ON (${IGNIS_PYTHON}, torch ${_ignis_torch_version})")
  endif()
endif()
if(NOT IGNIS_HAVE_TORCH)
  set(IGNIS_TORCH_STATUS "OFF (python3-torch not found)")
endif()
