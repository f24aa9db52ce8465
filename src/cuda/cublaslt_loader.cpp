// The cuBLASLt entry points Ignis calls, defined here so that libignis does not link
// libcublasLt: each opens the library with dlopen the first time any of them is called and
// forwards to the real function. libcublasLt is over 500 MB with ~400,000 relocations; linked,
// the dynamic loader mapped and relocated it at every process start (about 0.5 s of the
// `ignis` command's start-up on a loaded two-core machine, GPU or not), for programs that
// may never multiply on a GPU.
//
// The definitions take their types from <cublasLt.h> (decltype of the declaration), so the
// compiler checks each against the header. A cuBLASLt function newly called elsewhere in
// src/cuda needs its forwarder here, else the link fails naming it.
#include <cublasLt.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <string>

#include "ignis/error.h"

namespace {

#define IGNIS_STRINGIFY2(x) #x
#define IGNIS_STRINGIFY(x) IGNIS_STRINGIFY2(x)

// The library's soname for the major version of the headers compiled against, then the file
// the build found (IGNIS_CUBLASLT_PATH), for a library outside the loader's search path.
void* cublaslt_library(std::string& error) {
  static std::string first_error;
  static void* const handle = [] {
    const char* soname = "libcublasLt.so." IGNIS_STRINGIFY(CUBLAS_VER_MAJOR);
    void* h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    first_error = dlerror();
    h = dlopen(IGNIS_CUBLASLT_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!h) first_error += std::string("; ") + dlerror();
    return h;
  }();
  error = first_error;
  return handle;
}

/// The function `name` of libcublasLt, or ignis::Error saying why it cannot be had.
template <class Fn>
Fn* entry(const char* name) {
  std::string error;
  void* lib = cublaslt_library(error);
  void* fn = lib ? dlsym(lib, name) : nullptr;
  if (!fn)
    throw ignis::Error(fmt::format(
        "[cuda] cannot load cuBLASLt's {} ({}); put libcublasLt on LD_LIBRARY_PATH",
        name,
        lib ? dlerror() : error.c_str()));
  return reinterpret_cast<Fn*>(fn);
}

}  // namespace

// Each forwarder resolves its function once (thread-safe static initialisation). They are
// hidden: exported, they would interpose on the cuBLASLt calls of other libraries in the
// process (cuDNN's engines, PyTorch's), routing them into the library this file opens, which
// may be another major version than theirs.
#pragma GCC visibility push(hidden)
extern "C" {

size_t cublasLtGetVersion() {
  static auto* fn = entry<decltype(cublasLtGetVersion)>("cublasLtGetVersion");
  return fn();
}

const char* cublasLtGetStatusName(cublasStatus_t status) {
  static auto* fn = entry<decltype(cublasLtGetStatusName)>("cublasLtGetStatusName");
  return fn(status);
}

const char* cublasLtGetStatusString(cublasStatus_t status) {
  static auto* fn = entry<decltype(cublasLtGetStatusString)>("cublasLtGetStatusString");
  return fn(status);
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  static auto* fn = entry<decltype(cublasLtCreate)>("cublasLtCreate");
  return fn(handle);
}

cublasStatus_t cublasLtMatmul(
    cublasLtHandle_t handle,
    cublasLtMatmulDesc_t desc,
    const void* alpha,
    const void* a,
    cublasLtMatrixLayout_t a_desc,
    const void* b,
    cublasLtMatrixLayout_t b_desc,
    const void* beta,
    const void* c,
    cublasLtMatrixLayout_t c_desc,
    void* d,
    cublasLtMatrixLayout_t d_desc,
    const cublasLtMatmulAlgo_t* algo,
    void* workspace,
    size_t workspace_bytes,
    cudaStream_t stream) {
  static auto* fn = entry<decltype(cublasLtMatmul)>("cublasLtMatmul");
  return fn(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo,
            workspace, workspace_bytes, stream);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle,
    cublasLtMatmulDesc_t desc,
    cublasLtMatrixLayout_t a_desc,
    cublasLtMatrixLayout_t b_desc,
    cublasLtMatrixLayout_t c_desc,
    cublasLtMatrixLayout_t d_desc,
    cublasLtMatmulPreference_t preference,
    int requested,
    cublasLtMatmulHeuristicResult_t results[],
    int* returned) {
  static auto* fn = entry<decltype(cublasLtMatmulAlgoGetHeuristic)>("cublasLtMatmulAlgoGetHeuristic");
  return fn(handle, desc, a_desc, b_desc, c_desc, d_desc, preference, requested, results, returned);
}

cublasStatus_t cublasLtMatmulDescCreate(
    cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
  static auto* fn = entry<decltype(cublasLtMatmulDescCreate)>("cublasLtMatmulDescCreate");
  return fn(desc, compute, scale);
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  static auto* fn = entry<decltype(cublasLtMatmulDescDestroy)>("cublasLtMatmulDescDestroy");
  return fn(desc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(
    cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t size) {
  static auto* fn =
      entry<decltype(cublasLtMatmulDescSetAttribute)>("cublasLtMatmulDescSetAttribute");
  return fn(desc, attr, buf, size);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  static auto* fn =
      entry<decltype(cublasLtMatmulPreferenceCreate)>("cublasLtMatmulPreferenceCreate");
  return fn(pref);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  static auto* fn =
      entry<decltype(cublasLtMatmulPreferenceDestroy)>("cublasLtMatmulPreferenceDestroy");
  return fn(pref);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref,
    cublasLtMatmulPreferenceAttributes_t attr,
    const void* buf,
    size_t size) {
  static auto* fn = entry<decltype(cublasLtMatmulPreferenceSetAttribute)>(
      "cublasLtMatmulPreferenceSetAttribute");
  return fn(pref, attr, buf, size);
}

cublasStatus_t cublasLtMatrixLayoutCreate(
    cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld) {
  static auto* fn = entry<decltype(cublasLtMatrixLayoutCreate)>("cublasLtMatrixLayoutCreate");
  return fn(layout, type, rows, cols, ld);
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  static auto* fn = entry<decltype(cublasLtMatrixLayoutDestroy)>("cublasLtMatrixLayoutDestroy");
  return fn(layout);
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(
    cublasLtMatrixLayout_t layout,
    cublasLtMatrixLayoutAttribute_t attr,
    const void* buf,
    size_t size) {
  static auto* fn =
      entry<decltype(cublasLtMatrixLayoutSetAttribute)>("cublasLtMatrixLayoutSetAttribute");
  return fn(layout, attr, buf, size);
}

}  // extern "C"
#pragma GCC visibility pop
