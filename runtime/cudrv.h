/* cudrv.h - the CUDA driver API, loaded at run time.
 *
 * libcuda.so.1 is opened with dlopen and every entry point is fetched through
 * cuGetProcAddress for the CUDA version the header describes, so the
 * binaries start on machines without a driver, and a call that needs a GPU
 * gets a clear status instead of a loader error.  One table, one X-macro:
 * X(name, return, (params)) becomes a member `name` of struct cudrv.
 */
#ifndef MK_CUDRV_H
#define MK_CUDRV_H

#include <cuda.h>
#include <stddef.h>

#define CUDRV_FUNCS(X)                                                            \
	X(cuInit, CUresult, (unsigned int))                                        \
	X(cuDriverGetVersion, CUresult, (int *))                                   \
	X(cuGetErrorName, CUresult, (CUresult, const char **))                     \
	X(cuGetErrorString, CUresult, (CUresult, const char **))                   \
	X(cuDeviceGetCount, CUresult, (int *))                                     \
	X(cuDeviceGet, CUresult, (CUdevice *, int))                                \
	X(cuDeviceGetName, CUresult, (char *, int, CUdevice))                      \
	X(cuDeviceGetAttribute, CUresult, (int *, CUdevice_attribute, CUdevice))   \
	X(cuDeviceTotalMem, CUresult, (size_t *, CUdevice))                        \
	X(cuDeviceCanAccessPeer, CUresult, (int *, CUdevice, CUdevice))            \
	X(cuDeviceGetPCIBusId, CUresult, (char *, int, CUdevice))                  \
	X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext *, CUdevice))             \
	X(cuDevicePrimaryCtxRelease, CUresult, (CUdevice))                         \
	X(cuCtxSetCurrent, CUresult, (CUcontext))                                  \
	X(cuCtxGetCurrent, CUresult, (CUcontext *))                                \
	X(cuCtxSynchronize, CUresult, (void))                                      \
	X(cuCtxEnablePeerAccess, CUresult, (CUcontext, unsigned int))              \
	X(cuModuleLoadData, CUresult, (CUmodule *, const void *))                  \
	X(cuModuleUnload, CUresult, (CUmodule))                                    \
	X(cuModuleGetFunction, CUresult, (CUfunction *, CUmodule, const char *))   \
	X(cuModuleGetGlobal, CUresult, (CUdeviceptr *, size_t *, CUmodule, const char *)) \
	X(cuFuncSetAttribute, CUresult, (CUfunction, CUfunction_attribute, int))   \
	X(cuFuncGetAttribute, CUresult, (int *, CUfunction_attribute, CUfunction)) \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessor, CUresult,                   \
	  (int *, CUfunction, int, size_t))                                        \
	X(cuLaunchKernel, CUresult, (CUfunction, unsigned, unsigned, unsigned,     \
	  unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **))     \
	X(cuLaunchKernelEx, CUresult, (const CUlaunchConfig *, CUfunction, void **, void **)) \
	X(cuOccupancyMaxActiveClusters, CUresult, (int *, CUfunction, const CUlaunchConfig *)) \
	X(cuMemAlloc, CUresult, (CUdeviceptr *, size_t))                           \
	X(cuMemFree, CUresult, (CUdeviceptr))                                      \
	X(cuMemGetInfo, CUresult, (size_t *, size_t *))                            \
	X(cuMemcpyHtoD, CUresult, (CUdeviceptr, const void *, size_t))             \
	X(cuMemcpyDtoH, CUresult, (void *, CUdeviceptr, size_t))                   \
	X(cuMemcpyDtoD, CUresult, (CUdeviceptr, CUdeviceptr, size_t))              \
	X(cuMemcpyHtoDAsync, CUresult, (CUdeviceptr, const void *, size_t, CUstream)) \
	X(cuMemcpyDtoHAsync, CUresult, (void *, CUdeviceptr, size_t, CUstream))   \
	X(cuMemsetD8, CUresult, (CUdeviceptr, unsigned char, size_t))              \
	X(cuMemsetD16, CUresult, (CUdeviceptr, unsigned short, size_t))            \
	X(cuMemsetD32, CUresult, (CUdeviceptr, unsigned int, size_t))              \
	X(cuMemsetD8Async, CUresult, (CUdeviceptr, unsigned char, size_t, CUstream)) \
	X(cuMemHostAlloc, CUresult, (void **, size_t, unsigned int))               \
	X(cuMemFreeHost, CUresult, (void *))                                       \
	X(cuMemHostGetDevicePointer, CUresult, (CUdeviceptr *, void *, unsigned int)) \
	X(cuMemCreate, CUresult, (CUmemGenericAllocationHandle *, size_t,          \
	  const CUmemAllocationProp *, unsigned long long))                        \
	X(cuMemRelease, CUresult, (CUmemGenericAllocationHandle))                  \
	X(cuMemAddressReserve, CUresult, (CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long)) \
	X(cuMemAddressFree, CUresult, (CUdeviceptr, size_t))                       \
	X(cuMemMap, CUresult, (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long)) \
	X(cuMemUnmap, CUresult, (CUdeviceptr, size_t))                             \
	X(cuMemSetAccess, CUresult, (CUdeviceptr, size_t, const CUmemAccessDesc *, size_t)) \
	X(cuMemGetAllocationGranularity, CUresult, (size_t *, const CUmemAllocationProp *, \
	  CUmemAllocationGranularity_flags))                                       \
	X(cuMemExportToShareableHandle, CUresult, (void *, CUmemGenericAllocationHandle, \
	  CUmemAllocationHandleType, unsigned long long))                          \
	X(cuMemImportFromShareableHandle, CUresult, (CUmemGenericAllocationHandle *, void *, \
	  CUmemAllocationHandleType))                                              \
	X(cuMemGetHandleForAddressRange, CUresult, (void *, CUdeviceptr, size_t,   \
	  CUmemRangeHandleType, unsigned long long))                               \
	X(cuStreamCreate, CUresult, (CUstream *, unsigned int))                    \
	X(cuStreamDestroy, CUresult, (CUstream))                                   \
	X(cuStreamSynchronize, CUresult, (CUstream))                               \
	X(cuStreamQuery, CUresult, (CUstream))                                     \
	X(cuStreamWaitEvent, CUresult, (CUstream, CUevent, unsigned int))          \
	X(cuStreamBeginCapture, CUresult, (CUstream, CUstreamCaptureMode))         \
	X(cuStreamEndCapture, CUresult, (CUstream, CUgraph *))                     \
	X(cuStreamIsCapturing, CUresult, (CUstream, CUstreamCaptureStatus *))      \
	X(cuThreadExchangeStreamCaptureMode, CUresult, (CUstreamCaptureMode *))    \
	X(cuGraphInstantiate, CUresult, (CUgraphExec *, CUgraph, unsigned long long)) \
	X(cuGraphLaunch, CUresult, (CUgraphExec, CUstream))                        \
	X(cuGraphExecDestroy, CUresult, (CUgraphExec))                             \
	X(cuGraphDestroy, CUresult, (CUgraph))                                     \
	X(cuEventCreate, CUresult, (CUevent *, unsigned int))                      \
	X(cuEventDestroy, CUresult, (CUevent))                                     \
	X(cuEventRecord, CUresult, (CUevent, CUstream))                            \
	X(cuEventSynchronize, CUresult, (CUevent))                                 \
	X(cuEventElapsedTime, CUresult, (float *, CUevent, CUevent))               \
	X(cuTensorMapEncodeTiled, CUresult, (CUtensorMap *, CUtensorMapDataType,   \
	  cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *,              \
	  const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,           \
	  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill))

typedef struct cudrv {
	void *lib;
	int version;   /* cuDriverGetVersion */
#define X(name, ret, params) ret(*name) params;
	CUDRV_FUNCS(X)
#undef X
} cudrv;

typedef enum cudrv_status {
	CUDRV_OK = 0,
	CUDRV_NO_DRIVER,   /* libcuda.so.1 missing, or an entry point missing */
	CUDRV_NO_GPU,      /* driver present, cuInit failed or no device */
	CUDRV_ERROR        /* another driver error */
} cudrv_status;

/* Loads the driver once per process (thread-safe) and calls cuInit(0).
 * On failure why[] says what happened in one sentence, e.g.
 * "no CUDA driver found (libcuda.so.1: cannot open shared object file)" or
 * "no GPU visible (cuInit: CUDA_ERROR_NO_DEVICE)". */
cudrv_status cudrv_get(const cudrv **out, char *why, size_t n);
/* "CUDA_ERROR_OUT_OF_MEMORY: out of memory" */
const char *cudrv_errstr(CUresult r);

#endif
