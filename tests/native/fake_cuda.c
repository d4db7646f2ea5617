/* A stand-in for the CUDA driver library (libcuda.so.1) for glrec's NVENC contract test.
 *
 * "Device" memory is host memory: cuMemAlloc returns a host address, copies are memcpy,
 * streams and events complete at once. It implements the driver entry points that the
 * PyNvVideoCodec wheel links against and the ones glrec calls through cuda-python (which
 * looks every function up with cuGetProcAddress), so glrec's real CUDA code and the real
 * PyNvVideoCodec module run on a machine without a GPU. It is a test double, not a CUDA.
 *
 * Environment:
 *   GLREC_FAKE_CUDA_DEVICES  number of devices (default 1)
 *   GLREC_FAKE_CUDA_LOG      file that gets one JSON line per call of interest (contexts made or retained,
 *                            with their device; copies, events)
 *   GLREC_FAKE_CUDA_DTOH_STATUS  status cuMemcpyDtoH returns without copying (700: a device read that faults)
 *
 * Types come from the ffnvcodec headers (Debian package libffmpeg-nvenc-dev).
 */
#define _GNU_SOURCE
#include <ffnvcodec/dynlink_cuda.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define OK 0
#define ERR_INVALID_VALUE 1
#define ERR_NOT_INITIALIZED 3
#define ERR_INVALID_DEVICE 101
#define ERR_INVALID_CONTEXT 201
#define ERR_INVALID_HANDLE 400
#define ERR_NOT_FOUND 500
#define ERR_NOT_SUPPORTED 801
#define MAX_DEVICES 8
#define STACK 64

struct CUctx_st {
    int device;
    int primary;
};
struct CUstream_st {
    CUcontext ctx;
    unsigned flags;
};
struct CUevent_st {
    unsigned long long id;
    unsigned long long recorded; /* how often it was recorded */
    CUstream stream;             /* stream of the last record */
};

struct alloc {
    uintptr_t base;
    size_t size;
    int device;
    struct alloc *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialised;
static int device_count = 1;
static struct CUctx_st primary[MAX_DEVICES];
static int primary_refs[MAX_DEVICES];
static struct alloc *allocs;
static unsigned long long next_event_id = 1;
static FILE *log_file;
static char log_path[4096];

static __thread CUcontext ctx_stack[STACK];
static __thread int ctx_depth; /* ctx_stack[ctx_depth - 1] is current; depth 0: none */

static void note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&lock);
    const char *path = getenv("GLREC_FAKE_CUDA_LOG");
    if (!path || strcmp(path, log_path) != 0) { /* a test process may point the log elsewhere between jobs */
        if (log_file) fclose(log_file);
        log_file = NULL;
        snprintf(log_path, sizeof log_path, "%s", path ? path : "");
        if (*log_path) log_file = fopen(log_path, "a");
    }
    if (!log_file) {
        pthread_mutex_unlock(&lock);
        va_end(ap);
        return;
    }
    vfprintf(log_file, fmt, ap);
    fputc('\n', log_file);
    fflush(log_file);
    pthread_mutex_unlock(&lock);
    va_end(ap);
}

static CUcontext current(void) { return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL; }

static struct alloc *find_alloc(uintptr_t p) {
    for (struct alloc *a = allocs; a; a = a->next)
        if (p >= a->base && p < a->base + a->size) return a;
    return NULL;
}

EXPORT CUresult cuInit(unsigned int flags) {
    (void)flags;
    pthread_mutex_lock(&lock);
    if (!initialised) {
        const char *n = getenv("GLREC_FAKE_CUDA_DEVICES");
        device_count = n ? atoi(n) : 1;
        if (device_count < 0) device_count = 0;
        if (device_count > MAX_DEVICES) device_count = MAX_DEVICES;
        for (int i = 0; i < MAX_DEVICES; i++) primary[i] = (struct CUctx_st){i, 1};
        initialised = 1;
    }
    pthread_mutex_unlock(&lock);
    return OK;
}

EXPORT CUresult cuDriverGetVersion(int *v) {
    if (!v) return ERR_INVALID_VALUE;
    *v = 13000;
    return OK;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
    if (!initialised) return ERR_NOT_INITIALIZED;
    *count = device_count;
    return OK;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
    if (!initialised) return ERR_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= device_count) return ERR_INVALID_DEVICE;
    *dev = ordinal;
    return OK;
}

static int valid_device(CUdevice d) { return initialised && d >= 0 && d < device_count; }

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    if (!valid_device(dev)) return ERR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "glrec stand-in CUDA device %d", dev);
    return OK;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice dev) {
    if (!valid_device(dev)) return ERR_INVALID_DEVICE;
    snprintf(bus, (size_t)len, "0000:%02X:00.0", 0xE0 + dev);
    return OK;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
    if (!valid_device(dev)) return ERR_INVALID_DEVICE;
    memset(uuid->bytes, 0, sizeof uuid->bytes);
    memcpy(uuid->bytes, "glrec-fake-dev", 14);
    uuid->bytes[15] = (char)dev;
    return OK;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) { return cuDeviceGetUuid(uuid, dev); }

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    if (!valid_device(dev)) return ERR_INVALID_DEVICE;
    *bytes = (size_t)1 << 30;
    return OK;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attrib, CUdevice dev) {
    if (!valid_device(dev)) return ERR_INVALID_DEVICE;
    switch (attrib) {
    case 75: *value = 8; break;  /* compute capability major */
    case 76: *value = 9; break;  /* compute capability minor */
    case 1: *value = 1024; break; /* max threads per block */
    case 16: *value = 1; break;  /* multiprocessor count */
    case 33: *value = 0; break;  /* PCI bus id (the bus is in cuDeviceGetPCIBusId) */
    default: *value = 0;
    }
    return OK;
}

EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev) {
    if (!valid_device(dev)) return ERR_INVALID_DEVICE;
    *major = 8;
    *minor = 9;
    return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
    if (!valid_device(dev)) return ERR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    primary_refs[dev]++;
    pthread_mutex_unlock(&lock);
    *ctx = &primary[dev];
    /* logged like cuCtxCreate: together they say on which devices a context was made (a probe must stay on its own) */
    note("{\"call\": \"cuDevicePrimaryCtxRetain\", \"device\": %d, \"ctx\": %llu}", dev,
         (unsigned long long)(uintptr_t)*ctx);
    return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    if (!valid_device(dev)) return ERR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    if (primary_refs[dev] > 0) primary_refs[dev]--;
    pthread_mutex_unlock(&lock);
    return OK;
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active) {
    if (!valid_device(dev)) return ERR_INVALID_DEVICE;
    *flags = 0;
    *active = primary_refs[dev] > 0;
    return OK;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned flags, CUdevice dev) {
    (void)flags;
    if (!valid_device(dev)) return ERR_INVALID_DEVICE;
    CUcontext c = calloc(1, sizeof *c);
    c->device = dev;
    *pctx = c;
    if (ctx_depth < STACK) ctx_stack[ctx_depth++] = c;
    note("{\"call\": \"cuCtxCreate\", \"device\": %d, \"ctx\": %llu}", dev, (unsigned long long)(uintptr_t)c);
    return OK;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
    if (!ctx) return ERR_INVALID_CONTEXT;
    /* A destroyed context leaves every thread's stack it is on (this thread's, here). */
    int kept = 0;
    for (int i = 0; i < ctx_depth; i++)
        if (ctx_stack[i] != ctx) ctx_stack[kept++] = ctx_stack[i];
    ctx_depth = kept;
    if (!ctx->primary) free(ctx);
    return OK;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
    if (ctx_depth == 0) {
        if (ctx) ctx_stack[ctx_depth++] = ctx;
    } else if (ctx) {
        ctx_stack[ctx_depth - 1] = ctx;
    } else {
        ctx_depth--;
    }
    return OK;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *ctx) {
    *ctx = current();
    return OK;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    if (!ctx) return ERR_INVALID_CONTEXT;
    if (ctx_depth >= STACK) return ERR_INVALID_VALUE;
    ctx_stack[ctx_depth++] = ctx;
    return OK;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx) {
    if (ctx_depth == 0) return ERR_INVALID_CONTEXT;
    CUcontext c = ctx_stack[--ctx_depth];
    if (ctx) *ctx = c;
    return OK;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *dev) {
    CUcontext c = current();
    if (!c) return ERR_INVALID_CONTEXT;
    *dev = c->device;
    return OK;
}

EXPORT CUresult cuCtxSynchronize(void) { return current() ? OK : ERR_INVALID_CONTEXT; }

static CUresult alloc_bytes(CUdeviceptr *dptr, size_t n) {
    CUcontext c = current();
    if (!c) return ERR_INVALID_CONTEXT;
    if (n == 0) return ERR_INVALID_VALUE;
    void *p = aligned_alloc(256, (n + 255) / 256 * 256);
    if (!p) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    memset(p, 0xCD, n); /* not zero: a reader of unwritten memory sees a pattern, not a clean black */
    struct alloc *a = malloc(sizeof *a);
    *a = (struct alloc){(uintptr_t)p, n, c->device, NULL};
    pthread_mutex_lock(&lock);
    a->next = allocs;
    allocs = a;
    pthread_mutex_unlock(&lock);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return OK;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t n) {
    CUresult r = alloc_bytes(dptr, n);
    if (r == OK) note("{\"call\": \"cuMemAlloc\", \"ptr\": %llu, \"size\": %zu}", (unsigned long long)*dptr, n);
    return r;
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned elem) {
    (void)elem;
    size_t p = (width + 255) / 256 * 256; /* pitched rows as a GPU aligns them */
    CUresult r = alloc_bytes(dptr, p * height);
    if (r == OK) {
        *pitch = p;
        note("{\"call\": \"cuMemAllocPitch\", \"ptr\": %llu, \"pitch\": %zu, \"height\": %zu}",
             (unsigned long long)*dptr, p, height);
    }
    return r;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t n, CUstream s) {
    (void)s;
    return cuMemAlloc_v2(dptr, n);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
    if (!dptr) return OK;
    pthread_mutex_lock(&lock);
    struct alloc **pp = &allocs;
    while (*pp && (*pp)->base != (uintptr_t)dptr) pp = &(*pp)->next;
    struct alloc *a = *pp;
    if (a) *pp = a->next;
    pthread_mutex_unlock(&lock);
    if (!a) return ERR_INVALID_VALUE;
    note("{\"call\": \"cuMemFree\", \"ptr\": %llu}", (unsigned long long)dptr);
    free((void *)a->base);
    free(a);
    return OK;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
    (void)s;
    return cuMemFree_v2(dptr);
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    *free_bytes = (size_t)1 << 29;
    *total = (size_t)1 << 30;
    return OK;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    memcpy((void *)(uintptr_t)dst, src, n);
    note("{\"call\": \"cuMemcpyHtoD\", \"dst\": %llu, \"size\": %zu}", (unsigned long long)dst, n);
    return OK;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    (void)s;
    return cuMemcpyHtoD_v2(dst, src, n);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    const char *fail = getenv("GLREC_FAKE_CUDA_DTOH_STATUS");
    CUresult status = fail && *fail ? (CUresult)atoi(fail) : OK;
    if (status == OK) memcpy(dst, (const void *)(uintptr_t)src, n);
    note("{\"call\": \"cuMemcpyDtoH\", \"src\": %llu, \"size\": %zu, \"status\": %d}", (unsigned long long)src, n,
         (int)status);
    return status;
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
    (void)s;
    return cuMemcpyDtoH_v2(dst, src, n);
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return OK;
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    (void)s;
    return cuMemcpyDtoD_v2(dst, src, n);
}

EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) { return cuMemcpyDtoD_v2(dst, src, n); }

EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    (void)s;
    return cuMemcpyDtoD_v2(dst, src, n);
}

static CUresult copy2d(const CUDA_MEMCPY2D *c, CUstream s, const char *name) {
    if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY) return ERR_NOT_SUPPORTED;
    const char *src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? (const char *)c->srcHost
                                                             : (const char *)(uintptr_t)c->srcDevice;
    char *dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? (char *)c->dstHost : (char *)(uintptr_t)c->dstDevice;
    if (!src || !dst) return ERR_INVALID_VALUE;
    src += c->srcY * c->srcPitch + c->srcXInBytes;
    dst += c->dstY * c->dstPitch + c->dstXInBytes;
    for (size_t y = 0; y < c->Height; y++)
        memcpy(dst + y * c->dstPitch, src + y * c->srcPitch, c->WidthInBytes);
    note("{\"call\": \"%s\", \"src\": %llu, \"src_pitch\": %zu, \"dst\": %llu, \"dst_pitch\": %zu, "
         "\"width\": %zu, \"height\": %zu, \"stream\": %llu}",
         name, (unsigned long long)(uintptr_t)src, c->srcPitch, (unsigned long long)(uintptr_t)dst, c->dstPitch,
         c->WidthInBytes, c->Height, (unsigned long long)(uintptr_t)s);
    return OK;
}

EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *c) { return copy2d(c, NULL, "cuMemcpy2D"); }
EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s) { return copy2d(c, s, "cuMemcpy2DAsync"); }
EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *c) { return copy2d(c, NULL, "cuMemcpy2D"); }

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) {
    memset((void *)(uintptr_t)dst, v, n);
    return OK;
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
    (void)s;
    return cuMemsetD8_v2(dst, v, n);
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr) {
    pthread_mutex_lock(&lock);
    struct alloc *a = find_alloc((uintptr_t)ptr);
    int device = a ? a->device : -1;
    pthread_mutex_unlock(&lock);
    if (!a) return ERR_INVALID_VALUE; /* not memory this driver allocated */
    switch (attribute) {
    case 1: *(CUcontext *)data = &primary[device]; return OK;     /* CONTEXT */
    case 2: *(unsigned *)data = CU_MEMORYTYPE_DEVICE; return OK;  /* MEMORY_TYPE */
    case 3: *(CUdeviceptr *)data = ptr; return OK;                /* DEVICE_POINTER */
    case 4: *(void **)data = NULL; return ERR_INVALID_VALUE;      /* HOST_POINTER */
    case 9: *(int *)data = device; return OK;                     /* DEVICE_ORDINAL */
    default: return ERR_NOT_SUPPORTED;
    }
}

/* The allocation holding ptr: the NVENC stand-in checks a surface fits in it before reading. */
EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr ptr) {
    pthread_mutex_lock(&lock);
    struct alloc *a = find_alloc((uintptr_t)ptr);
    if (a) {
        if (base) *base = (CUdeviceptr)a->base;
        if (size) *size = a->size;
    }
    pthread_mutex_unlock(&lock);
    return a ? OK : ERR_NOT_FOUND;
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags) {
    CUcontext c = current();
    if (!c) return ERR_INVALID_CONTEXT;
    *s = calloc(1, sizeof **s);
    (*s)->ctx = c;
    (*s)->flags = flags;
    return OK;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
    free(s);
    return OK;
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
    (void)s;
    return OK;
}

EXPORT CUresult cuStreamQuery(CUstream s) {
    (void)s;
    return OK;
}

EXPORT CUresult cuStreamGetCtx(CUstream s, CUcontext *ctx) {
    *ctx = s ? s->ctx : current();
    return *ctx ? OK : ERR_INVALID_CONTEXT;
}

EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
    (void)flags;
    if (!e) return ERR_INVALID_HANDLE;
    note("{\"call\": \"cuStreamWaitEvent\", \"stream\": %llu, \"event\": %llu}", (unsigned long long)(uintptr_t)s,
         e->id);
    return OK;
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags) {
    (void)flags;
    *e = calloc(1, sizeof **e);
    pthread_mutex_lock(&lock);
    (*e)->id = next_event_id++;
    pthread_mutex_unlock(&lock);
    return OK;
}

EXPORT CUresult cuEventDestroy_v2(CUevent e) {
    free(e);
    return OK;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
    if (!e) return ERR_INVALID_HANDLE;
    e->recorded++;
    e->stream = s;
    note("{\"call\": \"cuEventRecord\", \"event\": %llu, \"stream\": %llu}", e->id, (unsigned long long)(uintptr_t)s);
    return OK;
}

EXPORT CUresult cuEventSynchronize(CUevent e) {
    if (!e) return ERR_INVALID_HANDLE;
    note("{\"call\": \"cuEventSynchronize\", \"event\": %llu}", e->id);
    return OK;
}

EXPORT CUresult cuEventQuery(CUevent e) { return e ? OK : ERR_INVALID_HANDLE; }

static const struct {
    int code;
    const char *name, *text;
} errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported by the glrec CUDA stand-in"},
};

EXPORT CUresult cuGetErrorName(CUresult err, const char **s) {
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        if (errors[i].code == (int)err) {
            *s = errors[i].name;
            return OK;
        }
    *s = "CUDA_ERROR_UNKNOWN";
    return OK;
}

EXPORT CUresult cuGetErrorString(CUresult err, const char **s) {
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
        if (errors[i].code == (int)err) {
            *s = errors[i].text;
            return OK;
        }
    *s = "unknown error";
    return OK;
}

/* cuda-python looks up every driver function by its base name; the table maps each to the
 * ABI version this file implements (the one current drivers return by default). */
static const struct {
    const char *name;
    void *fn;
} table[] = {
#define F(base, impl) {#base, (void *)impl}
    F(cuInit, cuInit), F(cuDriverGetVersion, cuDriverGetVersion), F(cuDeviceGetCount, cuDeviceGetCount),
    F(cuDeviceGet, cuDeviceGet), F(cuDeviceGetName, cuDeviceGetName), F(cuDeviceGetPCIBusId, cuDeviceGetPCIBusId),
    F(cuDeviceGetUuid, cuDeviceGetUuid_v2), F(cuDeviceTotalMem, cuDeviceTotalMem_v2),
    F(cuDeviceGetAttribute, cuDeviceGetAttribute), F(cuDeviceComputeCapability, cuDeviceComputeCapability),
    F(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain), F(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2),
    F(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState), F(cuCtxSetCurrent, cuCtxSetCurrent),
    F(cuCtxGetCurrent, cuCtxGetCurrent), F(cuCtxPushCurrent, cuCtxPushCurrent_v2),
    F(cuCtxPopCurrent, cuCtxPopCurrent_v2), F(cuCtxGetDevice, cuCtxGetDevice), F(cuCtxSynchronize, cuCtxSynchronize),
    F(cuCtxDestroy, cuCtxDestroy_v2), F(cuMemAlloc, cuMemAlloc_v2), F(cuMemAllocPitch, cuMemAllocPitch_v2),
    F(cuMemAllocAsync, cuMemAllocAsync), F(cuMemFree, cuMemFree_v2), F(cuMemFreeAsync, cuMemFreeAsync),
    F(cuMemGetInfo, cuMemGetInfo_v2), F(cuMemcpyHtoD, cuMemcpyHtoD_v2), F(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2),
    F(cuMemcpyDtoH, cuMemcpyDtoH_v2), F(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2), F(cuMemcpyDtoD, cuMemcpyDtoD_v2),
    F(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2), F(cuMemcpy, cuMemcpy), F(cuMemcpyAsync, cuMemcpyAsync),
    F(cuMemcpy2D, cuMemcpy2D_v2), F(cuMemcpy2DAsync, cuMemcpy2DAsync_v2),
    F(cuMemcpy2DUnaligned, cuMemcpy2DUnaligned_v2), F(cuMemsetD8, cuMemsetD8_v2), F(cuMemsetD8Async, cuMemsetD8Async),
    F(cuPointerGetAttribute, cuPointerGetAttribute), F(cuMemGetAddressRange, cuMemGetAddressRange_v2),
    F(cuStreamCreate, cuStreamCreate),
    F(cuStreamDestroy, cuStreamDestroy_v2), F(cuStreamSynchronize, cuStreamSynchronize),
    F(cuStreamQuery, cuStreamQuery), F(cuStreamGetCtx, cuStreamGetCtx), F(cuStreamWaitEvent, cuStreamWaitEvent),
    F(cuEventCreate, cuEventCreate), F(cuEventDestroy, cuEventDestroy_v2), F(cuEventRecord, cuEventRecord),
    F(cuEventSynchronize, cuEventSynchronize), F(cuEventQuery, cuEventQuery), F(cuGetErrorName, cuGetErrorName),
    F(cuGetErrorString, cuGetErrorString),
#undef F
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                                    int *status) {
    (void)version;
    (void)flags;
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (strcmp(table[i].name, symbol) == 0) {
            *pfn = table[i].fn;
            if (status) *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
            return OK;
        }
    *pfn = NULL;
    if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    return ERR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
