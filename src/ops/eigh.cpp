// linalg_eigh: eigenvalues and eigenvectors of a real symmetric matrix through LAPACK's
// divide-and-conquer dsyevd (OpenBLAS carries LAPACK). The matrices this serves are small
// (the 12 x 12 patch covariance of a whitening layer), so every input is solved in float64 on
// the host and the results return in the input's dtype and device — a CUDA tensor makes one
// round trip rather than needing a cuSOLVER path of its own.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/shape.h"
#include "ignis/ops.h"

extern "C" {
// LAPACK's Fortran interface (column-major; the trailing lengths are gfortran's hidden
// CHARACTER arguments).
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda,
             double* w, double* work, const int* lwork, int* iwork, const int* liwork,
             int* info, size_t jobz_len, size_t uplo_len);
}

namespace ignis {

std::tuple<Tensor, Tensor> linalg_eigh(const Tensor& a, char uplo) {
  IGNIS_CHECK(a.defined(), ValueError, "[linalg_eigh] undefined tensor");
  IGNIS_CHECK(a.dim() == 2 && a.size(0) == a.size(1), ValueError,
              "[linalg_eigh] expected a square matrix [n, n], got shape {}",
              detail::shape_str(a.sizes()));
  IGNIS_CHECK(a.dtype() == kFloat32 || a.dtype() == kFloat64, DTypeError,
              "[linalg_eigh] expected float32 or float64, got {}", dtype_name(a.dtype()));
  IGNIS_CHECK(uplo == 'L' || uplo == 'U', ValueError,
              "[linalg_eigh] uplo must be 'L' or 'U', got '{}'", uplo);
  IGNIS_CHECK(a.size(0) <= 46340, ValueError,  // n * n must fit LAPACK's 32-bit int
              "[linalg_eigh] matrix of side {} is too large for LAPACK's 32-bit sizes",
              a.size(0));
  const int n = int(a.size(0));
  // Row-major A read as column-major is A^T; the triangle named for the row-major matrix is
  // the opposite one of its transpose.
  const char lapack_uplo = uplo == 'L' ? 'U' : 'L';
  Tensor m = a.to(Device::cpu()).to(kFloat64, /*copy=*/true).contiguous();
  for (int64_t i = 0; i < m.numel(); ++i)  // LAPACK's answer to NaN is not an error
    IGNIS_CHECK(std::isfinite(m.data_ptr<double>()[i]), ValueError,
                "[linalg_eigh] the matrix holds a non-finite value (NaN or infinity)");
  Tensor w = empty({int64_t(n)}, TensorOptions(kFloat64));
  const char jobz = 'V';
  int info = 0;
  if (n > 0) {
    const int lda = n;
    int query_lwork = -1, query_liwork = -1, iwork_size = 0;
    double work_size = 0;
    dsyevd_(&jobz, &lapack_uplo, &n, m.data_ptr<double>(), &lda, w.data_ptr<double>(),
            &work_size, &query_lwork, &iwork_size, &query_liwork, &info, 1, 1);
    IGNIS_CHECK(info == 0, Error, "[linalg_eigh] dsyevd workspace query failed ({})",
                info);
    const int lwork = int(work_size), liwork = iwork_size;
    std::vector<double> work(size_t(std::max(lwork, 1)));
    std::vector<int> iwork(size_t(std::max(liwork, 1)));
    dsyevd_(&jobz, &lapack_uplo, &n, m.data_ptr<double>(), &lda, w.data_ptr<double>(),
            work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  }
  IGNIS_CHECK(info >= 0, Error, "[linalg_eigh] dsyevd rejected argument {}", -info);
  IGNIS_CHECK(info == 0, Error,
              "[linalg_eigh] dsyevd did not converge ({} off-diagonal elements left; is the "
              "input finite?)",
              info);
  // Column k of the column-major result is row k of m: the eigenvectors as columns are m^T.
  Tensor vectors = m.transpose(0, 1).contiguous();
  return {w.to(a.device(), a.dtype()), vectors.to(a.device(), a.dtype())};
}

}  // namespace ignis
