/* A stand-in for NVIDIA's NVENC library (libnvidia-encode.so.1) for glrec's NVENC contract test.
 *
 * It implements the NVENC API entry points that PyNvVideoCodec calls, encodes nothing, and
 * records instead what it was asked to do:
 *   - one JSON line per call of interest (session open, the full encoder configuration,
 *     every picture's parameters, registered surfaces, flushes) in $GLREC_FAKE_NVENC_LOG;
 *   - every input surface, as the bytes NVENC would read (all rows at the surface's pitch),
 *     in $GLREC_FAKE_NVENC_DUMP/surface_<session>_<n>.bin. A registered CUDA surface is read
 *     through whichever libcuda.so.1 the process loaded (the real driver on a GPU, where device
 *     memory is not host-addressable, or the stand-in), in the session's context after the
 *     input stream has finished, after checking it is device memory and that every plane's rows fit
 *     in its allocation (cuMemGetAddressRange); each picture's record gives the resource type, the
 *     planes (offset, rows, row bytes, pitch), the memory type and the allocation; a read that fails
 *     fails the picture and says why in the log;
 *   - one marker packet per picture, "GLRECFAKE picture=N frameIdx=N timestamp=N type=N flags=N;"
 *     (picture type as NV_ENC_PIC_TYPE, encodePicFlags as given), wrapped as a unit a bitstream
 *     parser accepts (see wrap_marker).
 * It can be told to fail like real hardware:
 *   GLREC_FAKE_NVENC_OPEN_STATUS   status of nvEncOpenEncodeSessionEx (2 = no encoder, as on an H200)
 *   GLREC_FAKE_NVENC_NO_ENCODER    CUDA ordinals without NVENC, "0" or "0,2": a session opened on a context of
 *                                  one of them gets NV_ENC_ERR_UNSUPPORTED_DEVICE (an H100 next to an L4)
 *   GLREC_FAKE_NVENC_MAX_SESSIONS  sessions that may be open at once in this process (0: none, as
 *                                  when other processes hold them all); one more gets
 *                                  NV_ENC_ERR_OUT_OF_MEMORY, the consumer-GPU session limit
 *   GLREC_FAKE_NVENC_INIT_STATUS   status of nvEncInitializeEncoder
 *   GLREC_FAKE_NVENC_API           the API version NvEncodeAPIGetMaxSupportedVersion reports (13.0)
 *   GLREC_FAKE_NVENC_MIN_SIZE      the WIDTH_MIN/HEIGHT_MIN caps, "WxH" (32x32)
 *
 * Built against NVIDIA's nvEncodeAPI.h as packaged in Debian's libffmpeg-nvenc-dev (API 11.1).
 * PyNvVideoCodec speaks API 12.1 or 13.0; every field read here has the same offset in 11.1,
 * 12.1 and 13.0 (checked with pahole on those three headers; the static asserts below pin the
 * offsets), except the AV1 configuration, which 11.1 lacks and which is read at its 12.x/13.0
 * offsets (AV1_* below).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <ffnvcodec/nvEncodeAPI.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

_Static_assert(offsetof(NV_ENC_INITIALIZE_PARAMS, encodeConfig) == 88, "layout");
_Static_assert(offsetof(NV_ENC_INITIALIZE_PARAMS, tuningInfo) == 136, "layout");
_Static_assert(offsetof(NV_ENC_CONFIG, rcParams) == 40, "layout");
_Static_assert(offsetof(NV_ENC_CONFIG, encodeCodecConfig) == 168, "layout");
_Static_assert(offsetof(NV_ENC_RC_PARAMS, targetQuality) == 88, "layout");
_Static_assert(offsetof(NV_ENC_RC_PARAMS, multiPass) == 100, "layout");
_Static_assert(offsetof(NV_ENC_CONFIG_H264, h264VUIParameters) == 72, "layout");
_Static_assert(offsetof(NV_ENC_CONFIG_HEVC, hevcVUIParameters) == 64, "layout");
_Static_assert(offsetof(NV_ENC_PIC_PARAMS, pictureType) == 72, "layout");
_Static_assert(offsetof(NV_ENC_LOCK_BITSTREAM, pictureType) == 64, "layout");
_Static_assert(offsetof(NV_ENC_REGISTER_RESOURCE, bufferUsage) == 44, "layout");
_Static_assert(offsetof(NV_ENCODE_API_FUNCTION_LIST, nvEncGetSequenceParamEx) == 328, "layout");

/* NV_ENC_CONFIG_AV1 (API 12.0+), as offsets into NV_ENC_CONFIG::encodeCodecConfig. */
#define AV1_FLAGS 16 /* bit 5 repeatSeqHdr, bits 7-8 chromaFormatIDC */
#define AV1_IDR_PERIOD 20
#define AV1_COLOR_PRIMARIES 68
#define AV1_TRANSFER 72
#define AV1_MATRIX 76
#define AV1_COLOR_RANGE 80
static const GUID AV1_GUID = {0x0a352289, 0x0aa7, 0x4759, {0x86, 0x2d, 0x5d, 0x15, 0xcd, 0x16, 0xd2, 0x54}};
static const GUID AV1_PROFILE_MAIN = {0x5f2a39f5, 0xf14e, 0x4f95, {0x9a, 0x9e, 0xb7, 0x6d, 0x56, 0x8f, 0xcf, 0x97}};

#define MAX_REGISTERED 64
#define MAX_BITSTREAMS 64
#define PACKET_CAPACITY 4096

struct surface { /* a registered CUDA surface, or an input buffer in host memory */
    char *ptr;
    uint32_t width, height, pitch;
    NV_ENC_BUFFER_FORMAT format;
    int in_use;
    int resource_type; /* NV_ENC_INPUT_RESOURCE_TYPE of a registered surface; -1 for an input buffer */
};

struct bitstream {
    unsigned char data[PACKET_CAPACITY];
    uint32_t size;
    uint32_t frame_idx;
    uint64_t timestamp;
    NV_ENC_PIC_TYPE type;
    int in_use;
};

struct session {
    int id;
    int initialised;
    GUID codec;
    uint32_t width, height, gop, idr_period;
    unsigned pictures;
    void *cuda_context; /* the CUcontext the session was opened on (NV_ENC_DEVICE_TYPE_CUDA), else NULL */
    void *input_stream; /* the CUstream set by nvEncSetIOCudaStreams, else NULL */
    struct surface surfaces[MAX_REGISTERED];
    struct bitstream *bitstreams[MAX_BITSTREAMS];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int open_sessions, next_session;
static FILE *log_file;
static char log_path[4096];
static const char *last_error = "";

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
    pthread_mutex_lock(&lock);
    const char *path = getenv("GLREC_FAKE_NVENC_LOG");
    if (!path || strcmp(path, log_path) != 0) { /* a test process may point the log elsewhere between jobs */
        if (log_file) fclose(log_file);
        log_file = NULL;
        snprintf(log_path, sizeof log_path, "%s", path ? path : "");
        if (*log_path) log_file = fopen(log_path, "a");
    }
    if (log_file) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(log_file, fmt, ap);
        va_end(ap);
        fputc('\n', log_file);
        fflush(log_file);
    }
    pthread_mutex_unlock(&lock);
}

static int same(GUID a, GUID b) { return memcmp(&a, &b, sizeof a) == 0; }

static const char *codec_name(GUID g) {
    if (same(g, NV_ENC_CODEC_H264_GUID)) return "h264";
    if (same(g, NV_ENC_CODEC_HEVC_GUID)) return "hevc";
    if (same(g, AV1_GUID)) return "av1";
    return "unknown";
}

static const GUID *presets[] = {&NV_ENC_PRESET_P1_GUID, &NV_ENC_PRESET_P2_GUID, &NV_ENC_PRESET_P3_GUID,
                                &NV_ENC_PRESET_P4_GUID, &NV_ENC_PRESET_P5_GUID, &NV_ENC_PRESET_P6_GUID,
                                &NV_ENC_PRESET_P7_GUID};

static int preset_number(GUID g) {
    for (int i = 0; i < 7; i++)
        if (same(g, *presets[i])) return i + 1;
    return 0;
}

static const char *profile_name(GUID g) {
    static const struct {
        const GUID *g;
        const char *name;
    } names[] = {{&NV_ENC_CODEC_PROFILE_AUTOSELECT_GUID, "auto"}, {&NV_ENC_H264_PROFILE_BASELINE_GUID, "baseline"},
                 {&NV_ENC_H264_PROFILE_MAIN_GUID, "main"},         {&NV_ENC_H264_PROFILE_HIGH_GUID, "high"},
                 {&NV_ENC_H264_PROFILE_HIGH_444_GUID, "high444"},  {&NV_ENC_HEVC_PROFILE_MAIN_GUID, "hevc-main"},
                 {&NV_ENC_HEVC_PROFILE_MAIN10_GUID, "hevc-main10"}, {&NV_ENC_HEVC_PROFILE_FREXT_GUID, "hevc-frext"},
                 {&AV1_PROFILE_MAIN, "av1-main"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (same(g, *names[i].g)) return names[i].name;
    return "unknown";
}

static int known_codec(GUID g) { return strcmp(codec_name(g), "unknown") != 0; }

static NVENCSTATUS fail(NVENCSTATUS status, const char *why) {
    last_error = why;
    logf_("{\"event\": \"error\", \"status\": %d, \"why\": \"%s\"}", status, why);
    return status;
}

/* -- session ------------------------------------------------------------------------------ */

static int context_device(void *context); /* the CUDA ordinal of a context, -1 unknown (defined below) */

/* Whether ordinal is in a comma-separated list such as "0,2". */
static int listed(const char *list, int ordinal) {
    for (const char *at = list; at && *at;) {
        char *end;
        long n = strtol(at, &end, 10);
        if (end == at) return 0;
        if (n == ordinal) return 1;
        at = *end == ',' ? end + 1 : end;
    }
    return 0;
}

static NVENCSTATUS NVENCAPI open_session_ex(NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS *p, void **encoder) {
    int status = env_int("GLREC_FAKE_NVENC_OPEN_STATUS", 0);
    int limit = env_int("GLREC_FAKE_NVENC_MAX_SESSIONS", -1);
    int ordinal = p->deviceType == NV_ENC_DEVICE_TYPE_CUDA ? context_device(p->device) : -1;
    logf_("{\"event\": \"open\", \"device_type\": %u, \"device\": %llu, \"cuda_device\": %d, \"api_version\": %u, "
          "\"open\": %d}",
          p->deviceType, (unsigned long long)(uintptr_t)p->device, ordinal, p->apiVersion, open_sessions);
    if (status) return fail((NVENCSTATUS)status, "session open refused (GLREC_FAKE_NVENC_OPEN_STATUS)");
    if (ordinal >= 0 && listed(getenv("GLREC_FAKE_NVENC_NO_ENCODER"), ordinal))
        return fail(NV_ENC_ERR_UNSUPPORTED_DEVICE, "no NVENC on this CUDA device (GLREC_FAKE_NVENC_NO_ENCODER)");
    pthread_mutex_lock(&lock);
    if (limit >= 0 && open_sessions >= limit) {
        pthread_mutex_unlock(&lock);
        return fail(NV_ENC_ERR_OUT_OF_MEMORY, "session limit reached (GLREC_FAKE_NVENC_MAX_SESSIONS)");
    }
    struct session *s = calloc(1, sizeof *s);
    s->id = next_session++;
    if (p->deviceType == NV_ENC_DEVICE_TYPE_CUDA) s->cuda_context = p->device;
    open_sessions++;
    pthread_mutex_unlock(&lock);
    *encoder = s;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI destroy_encoder(void *encoder) {
    struct session *s = encoder;
    if (!s) return NV_ENC_ERR_INVALID_PTR;
    logf_("{\"event\": \"destroy\", \"session\": %d, \"pictures\": %u}", s->id, s->pictures);
    for (int i = 0; i < MAX_BITSTREAMS; i++) free(s->bitstreams[i]);
    for (int i = 0; i < MAX_REGISTERED; i++)
        if (s->surfaces[i].in_use && s->surfaces[i].ptr && s->surfaces[i].format & 0x80000000u) free(s->surfaces[i].ptr);
    pthread_mutex_lock(&lock);
    open_sessions--;
    pthread_mutex_unlock(&lock);
    free(s);
    return NV_ENC_SUCCESS;
}

/* -- capabilities ------------------------------------------------------------------------- */

static NVENCSTATUS NVENCAPI get_guid_count(void *e, uint32_t *n) {
    (void)e;
    *n = 3;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI get_guids(void *e, GUID *out, uint32_t size, uint32_t *n) {
    (void)e;
    GUID all[3] = {NV_ENC_CODEC_H264_GUID, NV_ENC_CODEC_HEVC_GUID, AV1_GUID};
    *n = size < 3 ? size : 3;
    memcpy(out, all, *n * sizeof *out);
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI get_profile_count(void *e, GUID codec, uint32_t *n) {
    (void)e;
    (void)codec;
    *n = 1;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI get_profiles(void *e, GUID codec, GUID *out, uint32_t size, uint32_t *n) {
    (void)e;
    *n = size ? 1 : 0;
    if (size)
        out[0] = same(codec, NV_ENC_CODEC_H264_GUID)   ? NV_ENC_H264_PROFILE_HIGH_GUID
                 : same(codec, NV_ENC_CODEC_HEVC_GUID) ? NV_ENC_HEVC_PROFILE_MAIN_GUID
                                                       : AV1_PROFILE_MAIN;
    return NV_ENC_SUCCESS;
}

static const NV_ENC_BUFFER_FORMAT formats[] = {NV_ENC_BUFFER_FORMAT_NV12, NV_ENC_BUFFER_FORMAT_IYUV,
                                               NV_ENC_BUFFER_FORMAT_YUV444, NV_ENC_BUFFER_FORMAT_ARGB,
                                               NV_ENC_BUFFER_FORMAT_ABGR};

static NVENCSTATUS NVENCAPI get_format_count(void *e, GUID codec, uint32_t *n) {
    (void)e;
    (void)codec;
    *n = sizeof formats / sizeof *formats;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI get_formats(void *e, GUID codec, NV_ENC_BUFFER_FORMAT *out, uint32_t size, uint32_t *n) {
    (void)e;
    (void)codec;
    uint32_t all = sizeof formats / sizeof *formats;
    *n = size < all ? size : all;
    memcpy(out, formats, *n * sizeof *out);
    return NV_ENC_SUCCESS;
}

static void min_size(int *w, int *h) {
    const char *v = getenv("GLREC_FAKE_NVENC_MIN_SIZE");
    *w = *h = 32;
    if (v && *v) sscanf(v, "%dx%d", w, h);
}

static NVENCSTATUS NVENCAPI get_caps(void *e, GUID codec, NV_ENC_CAPS_PARAM *p, int *value) {
    (void)e;
    int w, h, big = same(codec, NV_ENC_CODEC_H264_GUID) ? 4096 : 8192;
    min_size(&w, &h);
    switch (p->capsToQuery) {
    case NV_ENC_CAPS_NUM_MAX_BFRAMES: *value = same(codec, NV_ENC_CODEC_HEVC_GUID) ? 5 : 4; break;
    case NV_ENC_CAPS_SUPPORTED_RATECONTROL_MODES: *value = 0x3f; break;
    case NV_ENC_CAPS_WIDTH_MAX: *value = big; break;
    case NV_ENC_CAPS_HEIGHT_MAX: *value = big; break;
    case NV_ENC_CAPS_WIDTH_MIN: *value = w; break;
    case NV_ENC_CAPS_HEIGHT_MIN: *value = h; break;
    case NV_ENC_CAPS_SUPPORT_YUV444_ENCODE: *value = 1; break;
    case NV_ENC_CAPS_SUPPORT_LOSSLESS_ENCODE: *value = 1; break;
    case NV_ENC_CAPS_SUPPORT_LOOKAHEAD: *value = 1; break;
    case NV_ENC_CAPS_SUPPORT_TEMPORAL_AQ: *value = 1; break;
    case NV_ENC_CAPS_SUPPORT_CUSTOM_VBV_BUF_SIZE: *value = 1; break;
    case NV_ENC_CAPS_SUPPORT_DYN_RES_CHANGE: *value = 1; break;
    case NV_ENC_CAPS_SUPPORT_DYN_BITRATE_CHANGE: *value = 1; break;
    case NV_ENC_CAPS_SUPPORT_10BIT_ENCODE: *value = 1; break;
    case NV_ENC_CAPS_ASYNC_ENCODE_SUPPORT: *value = 0; break; /* asynchronous mode is Windows-only */
    case NV_ENC_CAPS_NUM_ENCODER_ENGINES: *value = 1; break;
    default: *value = 0;
    }
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI get_preset_count(void *e, GUID codec, uint32_t *n) {
    (void)e;
    (void)codec;
    *n = 7;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI get_preset_guids(void *e, GUID codec, GUID *out, uint32_t size, uint32_t *n) {
    (void)e;
    (void)codec;
    *n = size < 7 ? size : 7;
    for (uint32_t i = 0; i < *n; i++) out[i] = *presets[i];
    return NV_ENC_SUCCESS;
}

/* A recognisable default configuration, so a test can tell a value the caller set from one
 * the "driver preset" supplied: VBR with no bitrate, GOP 250, no B-frames. */
static NVENCSTATUS fill_preset(GUID codec, GUID preset, NV_ENC_PRESET_CONFIG *p) {
    if (!known_codec(codec)) return fail(NV_ENC_ERR_INVALID_PARAM, "unknown codec GUID");
    if (!preset_number(preset)) return fail(NV_ENC_ERR_INVALID_PARAM, "unknown preset GUID");
    NV_ENC_CONFIG *c = &p->presetCfg;
    uint32_t version = c->version;
    memset(c, 0, sizeof *c);
    c->version = version;
    c->profileGUID = NV_ENC_CODEC_PROFILE_AUTOSELECT_GUID;
    c->gopLength = 250;
    c->frameIntervalP = 1;
    c->frameFieldMode = NV_ENC_PARAMS_FRAME_FIELD_MODE_FRAME;
    c->mvPrecision = NV_ENC_MV_PRECISION_QUARTER_PEL;
    c->rcParams.rateControlMode = NV_ENC_PARAMS_RC_VBR;
    c->rcParams.constQP = (NV_ENC_QP){28, 31, 25};
    if (same(codec, NV_ENC_CODEC_H264_GUID)) {
        c->encodeCodecConfig.h264Config.idrPeriod = 250;
        c->encodeCodecConfig.h264Config.chromaFormatIDC = 1;
    } else if (same(codec, NV_ENC_CODEC_HEVC_GUID)) {
        c->encodeCodecConfig.hevcConfig.idrPeriod = 250;
        c->encodeCodecConfig.hevcConfig.chromaFormatIDC = 1;
    } else {
        char *av1 = (char *)&c->encodeCodecConfig;
        *(uint32_t *)(av1 + AV1_IDR_PERIOD) = 250;
        *(uint32_t *)(av1 + AV1_FLAGS) |= 1u << 7; /* chromaFormatIDC 1 */
    }
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI get_preset_config(void *e, GUID codec, GUID preset, NV_ENC_PRESET_CONFIG *p) {
    (void)e;
    return fill_preset(codec, preset, p);
}

static NVENCSTATUS NVENCAPI get_preset_config_ex(void *e, GUID codec, GUID preset, NV_ENC_TUNING_INFO t,
                                                 NV_ENC_PRESET_CONFIG *p) {
    (void)e;
    logf_("{\"event\": \"preset_config\", \"codec\": \"%s\", \"preset\": %d, \"tuning\": %d}", codec_name(codec),
          preset_number(preset), t);
    return fill_preset(codec, preset, p);
}

/* -- initialisation: record the whole configuration ------------------------------------------ */

static void vui_json(char *out, size_t n, const NV_ENC_CONFIG_H264_VUI_PARAMETERS *v) {
    snprintf(out, n,
             "{\"videoSignalTypePresentFlag\": %u, \"videoFormat\": %u, \"videoFullRangeFlag\": %u, "
             "\"colourDescriptionPresentFlag\": %u, \"colourPrimaries\": %u, \"transferCharacteristics\": %u, "
             "\"colourMatrix\": %u, \"chromaSampleLocationFlag\": %u, \"bitstreamRestrictionFlag\": %u}",
             v->videoSignalTypePresentFlag, v->videoFormat, v->videoFullRangeFlag, v->colourDescriptionPresentFlag,
             v->colourPrimaries, v->transferCharacteristics, v->colourMatrix, v->chromaSampleLocationFlag,
             v->bitstreamRestrictionFlag);
}

static void codec_json(char *out, size_t n, GUID codec, NV_ENC_CONFIG *c) {
    char vui[1024];
    if (same(codec, NV_ENC_CODEC_H264_GUID)) {
        NV_ENC_CONFIG_H264 *h = &c->encodeCodecConfig.h264Config;
        vui_json(vui, sizeof vui, &h->h264VUIParameters);
        snprintf(out, n,
                 "{\"idrPeriod\": %u, \"repeatSPSPPS\": %u, \"disableSPSPPS\": %u, \"chromaFormatIDC\": %u, "
                 "\"qpPrimeYZeroTransformBypassFlag\": %u, \"outputAUD\": %u, \"level\": %u, \"vui\": %s}",
                 h->idrPeriod, h->repeatSPSPPS, h->disableSPSPPS, h->chromaFormatIDC, h->qpPrimeYZeroTransformBypassFlag,
                 h->outputAUD, h->level, vui);
    } else if (same(codec, NV_ENC_CODEC_HEVC_GUID)) {
        NV_ENC_CONFIG_HEVC *h = &c->encodeCodecConfig.hevcConfig;
        vui_json(vui, sizeof vui, &h->hevcVUIParameters);
        snprintf(out, n,
                 "{\"idrPeriod\": %u, \"repeatSPSPPS\": %u, \"disableSPSPPS\": %u, \"chromaFormatIDC\": %u, "
                 "\"outputAUD\": %u, \"level\": %u, \"vui\": %s}",
                 h->idrPeriod, h->repeatSPSPPS, h->disableSPSPPS, h->chromaFormatIDC, h->outputAUD, h->level, vui);
    } else {
        const char *a = (const char *)&c->encodeCodecConfig;
        uint32_t flags = *(const uint32_t *)(a + AV1_FLAGS);
        snprintf(out, n,
                 "{\"idrPeriod\": %u, \"repeatSeqHdr\": %u, \"chromaFormatIDC\": %u, \"colorPrimaries\": %u, "
                 "\"transferCharacteristics\": %u, \"matrixCoefficients\": %u, \"colorRange\": %u}",
                 *(const uint32_t *)(a + AV1_IDR_PERIOD), (flags >> 5) & 1, (flags >> 7) & 3,
                 *(const uint32_t *)(a + AV1_COLOR_PRIMARIES), *(const uint32_t *)(a + AV1_TRANSFER),
                 *(const uint32_t *)(a + AV1_MATRIX), *(const uint32_t *)(a + AV1_COLOR_RANGE));
    }
}

static NVENCSTATUS NVENCAPI initialize(void *encoder, NV_ENC_INITIALIZE_PARAMS *p) {
    struct session *s = encoder;
    NV_ENC_CONFIG *c = p->encodeConfig;
    NV_ENC_PRESET_CONFIG defaults = {.presetCfg = {.version = NV_ENC_CONFIG_VER}};
    if (!c) { /* NVENC uses the preset's configuration when none is given */
        fill_preset(p->encodeGUID, p->presetGUID, &defaults);
        c = &defaults.presetCfg;
    }
    NV_ENC_RC_PARAMS *rc = &c->rcParams;
    static char codec[4096];
    codec_json(codec, sizeof codec, p->encodeGUID, c);
    logf_("{\"event\": \"initialize\", \"session\": %d, \"codec\": \"%s\", \"preset\": %d, \"tuning\": %d, "
          "\"width\": %u, \"height\": %u, \"darWidth\": %u, \"darHeight\": %u, \"frameRateNum\": %u, "
          "\"frameRateDen\": %u, \"enableEncodeAsync\": %u, \"enablePTD\": %u, \"maxEncodeWidth\": %u, "
          "\"maxEncodeHeight\": %u, \"config_given\": %d, \"profile\": \"%s\", \"gopLength\": %u, "
          "\"frameIntervalP\": %d, \"rc\": {\"rateControlMode\": %d, \"constQP\": [%u, %u, %u], "
          "\"averageBitRate\": %u, \"maxBitRate\": %u, \"vbvBufferSize\": %u, \"vbvInitialDelay\": %u, "
          "\"targetQuality\": %u, \"targetQualityLSB\": %u, \"enableLookahead\": %u, \"lookaheadDepth\": %u, "
          "\"zeroReorderDelay\": %u, \"enableAQ\": %u, \"enableTemporalAQ\": %u, \"multiPass\": %d, "
          "\"enableMinQP\": %u, \"enableMaxQP\": %u}, \"codec_config\": %s}",
          s->id, codec_name(p->encodeGUID), preset_number(p->presetGUID), p->tuningInfo, p->encodeWidth,
          p->encodeHeight, p->darWidth, p->darHeight, p->frameRateNum, p->frameRateDen, p->enableEncodeAsync,
          p->enablePTD, p->maxEncodeWidth, p->maxEncodeHeight, p->encodeConfig != NULL,
          profile_name(c->profileGUID), c->gopLength, c->frameIntervalP, rc->rateControlMode, rc->constQP.qpInterP,
          rc->constQP.qpInterB, rc->constQP.qpIntra, rc->averageBitRate, rc->maxBitRate, rc->vbvBufferSize,
          rc->vbvInitialDelay, rc->targetQuality, rc->targetQualityLSB, rc->enableLookahead, rc->lookaheadDepth,
          rc->zeroReorderDelay, rc->enableAQ, rc->enableTemporalAQ, rc->multiPass, rc->enableMinQP, rc->enableMaxQP,
          codec);
    int status = env_int("GLREC_FAKE_NVENC_INIT_STATUS", 0);
    if (status) return fail((NVENCSTATUS)status, "initialisation refused (GLREC_FAKE_NVENC_INIT_STATUS)");
    if (!known_codec(p->encodeGUID)) return fail(NV_ENC_ERR_INVALID_PARAM, "unknown codec GUID");
    if (!preset_number(p->presetGUID)) return fail(NV_ENC_ERR_INVALID_PARAM, "unknown preset GUID");
    int w, h, big = same(p->encodeGUID, NV_ENC_CODEC_H264_GUID) ? 4096 : 8192;
    min_size(&w, &h);
    if ((int)p->encodeWidth < w || (int)p->encodeHeight < h || (int)p->encodeWidth > big || (int)p->encodeHeight > big)
        return fail(NV_ENC_ERR_INVALID_PARAM, "picture size outside the WIDTH/HEIGHT MIN/MAX caps");
    s->initialised = 1;
    s->codec = p->encodeGUID;
    s->width = p->encodeWidth;
    s->height = p->encodeHeight;
    s->gop = c->gopLength;
    s->idr_period = same(s->codec, NV_ENC_CODEC_H264_GUID)   ? c->encodeCodecConfig.h264Config.idrPeriod
                    : same(s->codec, NV_ENC_CODEC_HEVC_GUID) ? c->encodeCodecConfig.hevcConfig.idrPeriod
                                                             : *(uint32_t *)((char *)&c->encodeCodecConfig + AV1_IDR_PERIOD);
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI reconfigure(void *encoder, NV_ENC_RECONFIGURE_PARAMS *p) {
    struct session *s = encoder;
    logf_("{\"event\": \"reconfigure\", \"session\": %d, \"forceIDR\": %u, \"resetEncoder\": %u}", s->id, p->forceIDR,
          p->resetEncoder);
    return NV_ENC_SUCCESS;
}

/* -- surfaces -------------------------------------------------------------------------------- */

/* One plane of a surface as NVENC reads it: rows of row_bytes, pitch apart, from offset. */
struct plane {
    size_t offset, rows, row_bytes, pitch;
};

/* The planes of a surface in one pitched allocation, as NVENC lays them out: chroma follows luma at the
 * same pitch, except IYUV/YV12, whose two chroma planes have half the pitch. Returns how many. */
static int surface_planes(const struct surface *f, struct plane out[3]) {
    size_t p = f->pitch, w = f->width, h = f->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    switch (f->format & 0x7fffffffu) {
    case NV_ENC_BUFFER_FORMAT_NV12:
        out[0] = (struct plane){0, h, w, p};
        out[1] = (struct plane){p * h, ch, 2 * cw, p};
        return 2;
    case NV_ENC_BUFFER_FORMAT_IYUV:
    case NV_ENC_BUFFER_FORMAT_YV12: {
        size_t cp = (p + 1) / 2;
        out[0] = (struct plane){0, h, w, p};
        out[1] = (struct plane){p * h, ch, cw, cp};
        out[2] = (struct plane){p * h + cp * ch, ch, cw, cp};
        return 3;
    }
    case NV_ENC_BUFFER_FORMAT_YUV444:
        for (int i = 0; i < 3; i++) out[i] = (struct plane){i * p * h, h, w, p};
        return 3;
    default: out[0] = (struct plane){0, h, 4 * w, p}; return 1; /* packed RGB: 4 bytes a pixel, pitch in bytes */
    }
}

/* Bytes from the surface's start to the end of its last plane's last row (all rows at full pitch). */
static size_t surface_bytes(const struct surface *f) {
    struct plane planes[3];
    int n = surface_planes(f, planes);
    return planes[n - 1].offset + planes[n - 1].rows * planes[n - 1].pitch;
}

/* The planes as JSON, for the encode record: [[offset, rows, row_bytes, pitch], ...]. */
static void planes_json(const struct surface *f, char *out, size_t size) {
    struct plane planes[3];
    int n = surface_planes(f, planes);
    size_t at = (size_t)snprintf(out, size, "[");
    for (int i = 0; i < n && at < size; i++)
        at += (size_t)snprintf(out + at, size - at, "%s[%zu, %zu, %zu, %zu]", i ? ", " : "", planes[i].offset,
                               planes[i].rows, planes[i].row_bytes, planes[i].pitch);
    if (at < size) snprintf(out + at, size - at, "]");
}

static struct surface *new_surface(struct session *s) {
    for (int i = 0; i < MAX_REGISTERED; i++)
        if (!s->surfaces[i].in_use) {
            s->surfaces[i].in_use = 1;
            return &s->surfaces[i];
        }
    return NULL;
}

static struct surface *find_surface(struct session *s, void *handle) {
    for (int i = 0; i < MAX_REGISTERED; i++)
        if (s->surfaces[i].in_use && (void *)&s->surfaces[i] == handle) return &s->surfaces[i];
    return NULL;
}

static NVENCSTATUS NVENCAPI register_resource(void *encoder, NV_ENC_REGISTER_RESOURCE *p) {
    struct session *s = encoder;
    logf_("{\"event\": \"register\", \"session\": %d, \"resourceType\": %d, \"width\": %u, \"height\": %u, "
          "\"pitch\": %u, \"bufferFormat\": %u, \"bufferUsage\": %d, \"ptr\": %llu}",
          s->id, p->resourceType, p->width, p->height, p->pitch, p->bufferFormat, p->bufferUsage,
          (unsigned long long)(uintptr_t)p->resourceToRegister);
    if (p->resourceType != NV_ENC_INPUT_RESOURCE_TYPE_CUDADEVICEPTR)
        return fail(NV_ENC_ERR_UNIMPLEMENTED, "the stand-in registers CUDA device pointers only");
    struct surface *f = new_surface(s);
    if (!f) return fail(NV_ENC_ERR_OUT_OF_MEMORY, "too many registered resources");
    *f = (struct surface){p->resourceToRegister, p->width, p->height, p->pitch, p->bufferFormat, 1, p->resourceType};
    p->registeredResource = f;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI unregister_resource(void *encoder, NV_ENC_REGISTERED_PTR r) {
    struct surface *f = find_surface(encoder, r);
    if (!f) return NV_ENC_ERR_RESOURCE_NOT_REGISTERED;
    f->in_use = 0;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI map_resource(void *encoder, NV_ENC_MAP_INPUT_RESOURCE *p) {
    struct surface *f = find_surface(encoder, p->registeredResource);
    if (!f) return NV_ENC_ERR_RESOURCE_NOT_REGISTERED;
    p->mappedResource = f;
    p->mappedBufferFmt = f->format;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI unmap_resource(void *encoder, NV_ENC_INPUT_PTR mapped) {
    return find_surface(encoder, mapped) ? NV_ENC_SUCCESS : NV_ENC_ERR_RESOURCE_NOT_MAPPED;
}

/* Input buffers in "system memory" (PyNvVideoCodec's host-input mode); flagged with bit 31. */
static NVENCSTATUS NVENCAPI create_input_buffer(void *encoder, NV_ENC_CREATE_INPUT_BUFFER *p) {
    struct session *s = encoder;
    struct surface *f = new_surface(s);
    if (!f) return fail(NV_ENC_ERR_OUT_OF_MEMORY, "too many input buffers");
    uint32_t bpp = (p->bufferFmt == NV_ENC_BUFFER_FORMAT_ARGB || p->bufferFmt == NV_ENC_BUFFER_FORMAT_ABGR) ? 4 : 1;
    *f = (struct surface){NULL, p->width, p->height, (p->width * bpp + 255) / 256 * 256, p->bufferFmt | 0x80000000u, 1,
                          -1};
    f->ptr = calloc(1, surface_bytes(f));
    p->inputBuffer = f;
    logf_("{\"event\": \"create_input_buffer\", \"session\": %d, \"width\": %u, \"height\": %u, \"bufferFmt\": %u}",
          s->id, p->width, p->height, p->bufferFmt);
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI destroy_input_buffer(void *encoder, NV_ENC_INPUT_PTR b) {
    struct surface *f = find_surface(encoder, b);
    if (!f) return NV_ENC_ERR_INVALID_PTR;
    free(f->ptr);
    f->ptr = NULL;
    f->in_use = 0;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI lock_input_buffer(void *encoder, NV_ENC_LOCK_INPUT_BUFFER *p) {
    struct surface *f = find_surface(encoder, p->inputBuffer);
    if (!f) return NV_ENC_ERR_INVALID_PTR;
    p->bufferDataPtr = f->ptr;
    p->pitch = f->pitch;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI unlock_input_buffer(void *encoder, NV_ENC_INPUT_PTR b) {
    return find_surface(encoder, b) ? NV_ENC_SUCCESS : NV_ENC_ERR_INVALID_PTR;
}

static NVENCSTATUS NVENCAPI create_bitstream(void *encoder, NV_ENC_CREATE_BITSTREAM_BUFFER *p) {
    struct session *s = encoder;
    for (int i = 0; i < MAX_BITSTREAMS; i++)
        if (!s->bitstreams[i]) {
            s->bitstreams[i] = calloc(1, sizeof(struct bitstream));
            s->bitstreams[i]->in_use = 1;
            p->bitstreamBuffer = s->bitstreams[i];
            return NV_ENC_SUCCESS;
        }
    return fail(NV_ENC_ERR_OUT_OF_MEMORY, "too many bitstream buffers");
}

static struct bitstream *find_bitstream(struct session *s, void *b) {
    for (int i = 0; i < MAX_BITSTREAMS; i++)
        if (s->bitstreams[i] && (void *)s->bitstreams[i] == b) return s->bitstreams[i];
    return NULL;
}

static NVENCSTATUS NVENCAPI destroy_bitstream(void *encoder, NV_ENC_OUTPUT_PTR b) {
    struct session *s = encoder;
    for (int i = 0; i < MAX_BITSTREAMS; i++)
        if (s->bitstreams[i] == b) {
            free(s->bitstreams[i]);
            s->bitstreams[i] = NULL;
            return NV_ENC_SUCCESS;
        }
    return NV_ENC_ERR_INVALID_PTR;
}

/* -- encoding -------------------------------------------------------------------------------- */

/* The CUDA driver calls needed to read a registered surface, looked up in the libcuda.so.1 the process
 * already uses (PyNvVideoCodec links it), so the same code reads real device memory on a GPU and the
 * stand-in's host memory elsewhere. */
static struct {
    const char *problem; /* why the driver cannot be used, NULL when it can */
    int (*push)(void *ctx);
    int (*pop)(void **ctx);
    int (*pointer_attribute)(void *data, int attribute, unsigned long long ptr);
    int (*stream_sync)(void *stream);
    int (*ctx_sync)(void);
    int (*dtoh)(void *dst, unsigned long long src, size_t n);
    int (*error_name)(int status, const char **name);
    int (*address_range)(unsigned long long *base, size_t *size, unsigned long long ptr); /* NULL: not checked */
    int (*ctx_get_device)(int *device); /* NULL: sessions are not told apart by device */
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void) {
    static char why[512];
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, sizeof why, "dlopen libcuda.so.1 failed: %s", dlerror());
        cu.problem = why;
        return;
    }
    static const char *names[] = {"cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2", "cuPointerGetAttribute",
                                  "cuStreamSynchronize", "cuCtxSynchronize",   "cuMemcpyDtoH_v2",
                                  "cuGetErrorName"};
    void **slots[] = {(void **)&cu.push,        (void **)&cu.pop,      (void **)&cu.pointer_attribute,
                      (void **)&cu.stream_sync, (void **)&cu.ctx_sync, (void **)&cu.dtoh,
                      (void **)&cu.error_name};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!(*slots[i] = dlsym(lib, names[i]))) {
            snprintf(why, sizeof why, "libcuda.so.1 has no %s", names[i]);
            cu.problem = why;
            return;
        }
    *(void **)&cu.address_range = dlsym(lib, "cuMemGetAddressRange_v2");
    *(void **)&cu.ctx_get_device = dlsym(lib, "cuCtxGetDevice");
}

static int context_device(void *context) {
    pthread_once(&cu_once, cu_load);
    int device = -1;
    if (cu.problem || !cu.ctx_get_device || !context || cu.push(context) != 0) return -1;
    if (cu.ctx_get_device(&device) != 0) device = -1;
    cu.pop(NULL);
    return device;
}

/* JSON-safe text: dlerror() and driver messages are free text. */
static void json_safe(char *text) {
    for (; *text; text++)
        if (*text == '"' || *text == '\\' || (unsigned char)*text < 0x20) *text = '\'';
}

static int cu_failed(int status, const char *step, char *why, size_t why_size) {
    const char *name = NULL;
    if (status == 0) return 0;
    if (cu.error_name) cu.error_name(status, &name);
    snprintf(why, why_size, "%s returned %d (%s)", step, status, name ? name : "?");
    return 1;
}

/* What the driver says about the memory behind a registered surface (logged with each picture). */
struct memory_info {
    unsigned memory_type;             /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE: 2 device, 1 host; 0 not asked */
    unsigned long long base;          /* the allocation holding the surface (cuMemGetAddressRange), 0 unknown */
    size_t size;
};

/* Copy a registered surface's bytes from device memory to host; 0 when done, else 1 with why. The surface
 * must be device memory and fit in its allocation (every plane's rows at full pitch), so a surface read
 * with the wrong layout says so instead of reading past its end. */
static int read_device_surface(struct session *s, const struct surface *f, void *host, size_t bytes,
                               struct memory_info *info, char *why, size_t why_size) {
    pthread_once(&cu_once, cu_load);
    if (cu.problem) {
        snprintf(why, why_size, "%s", cu.problem);
        return 1;
    }
    unsigned long long ptr = (unsigned long long)(uintptr_t)f->ptr;
    void *context = s->cuda_context;
    if (!context && cu_failed(cu.pointer_attribute(&context, 1 /* CU_POINTER_ATTRIBUTE_CONTEXT */, ptr),
                              "cuPointerGetAttribute(CONTEXT)", why, why_size))
        return 1;
    if (cu_failed(cu.push(context), "cuCtxPushCurrent", why, why_size)) return 1;
    int failed = cu_failed(cu.pointer_attribute(&info->memory_type, 2 /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE */, ptr),
                           "cuPointerGetAttribute(MEMORY_TYPE)", why, why_size);
    if (!failed && info->memory_type != 2 /* CU_MEMORYTYPE_DEVICE */) {
        snprintf(why, why_size, "surface at %llu is memory type %u, not device memory", ptr, info->memory_type);
        failed = 1;
    }
    if (!failed && cu.address_range) {
        failed = cu_failed(cu.address_range(&info->base, &info->size, ptr), "cuMemGetAddressRange", why, why_size);
        if (!failed && ptr + bytes > info->base + info->size) {
            snprintf(why, why_size, "surface needs %zu bytes from %llu, its allocation holds %zu from %llu", bytes, ptr,
                     info->size, info->base);
            failed = 1;
        }
    }
    /* NVENC waits for the input stream before it reads; the caller's copies into the surface are queued there. */
    void *stream = s->input_stream;
    failed = failed || (stream && cu_failed(cu.stream_sync(stream), "cuStreamSynchronize", why, why_size)) ||
             cu_failed(cu.ctx_sync(), "cuCtxSynchronize", why, why_size) ||
             cu_failed(cu.dtoh(host, ptr, bytes), "cuMemcpyDtoH", why, why_size);
    char popped[256];
    if (cu_failed(cu.pop(NULL), "cuCtxPopCurrent", popped, sizeof popped) && !failed) {
        snprintf(why, why_size, "%s", popped);
        failed = 1;
    }
    return failed;
}

/* Write the surface's bytes to the dump directory when one is set: name gets the file, bytes its size.
 * Returns 0, or 1 with why when the surface could not be read or written. */
static int dump_surface(struct session *s, const struct surface *f, unsigned n, char *name, size_t name_size,
                        size_t *bytes, struct memory_info *info, char *why, size_t why_size) {
    const char *dir = getenv("GLREC_FAKE_NVENC_DUMP");
    name[0] = 0;
    *bytes = surface_bytes(f);
    if (!dir || !*dir) return 0;
    if (*bytes == 0) {
        snprintf(why, why_size, "surface of %ux%u, pitch %u, format 0x%x has no bytes", f->width, f->height, f->pitch,
                 f->format & 0x7fffffffu);
        return 1;
    }
    char *host = f->ptr;
    int from_device = !(f->format & 0x80000000u); /* a registered CUDA pointer, not one of our input buffers */
    if (from_device) {
        host = malloc(*bytes);
        if (!host) {
            snprintf(why, why_size, "no host memory for %zu bytes", *bytes);
            return 1;
        }
        if (read_device_surface(s, f, host, *bytes, info, why, why_size)) {
            free(host);
            return 1;
        }
    }
    snprintf(name, name_size, "%s/surface_%d_%06u.bin", dir, s->id, n);
    FILE *out = fopen(name, "wb");
    size_t written = out ? fwrite(host, 1, *bytes, out) : 0;
    int closed = out ? fclose(out) : EOF;
    if (from_device) free(host);
    if (written != *bytes || closed != 0) {
        snprintf(why, why_size, "writing %zu bytes to %.700s failed (%zu written)", *bytes, name, written);
        name[0] = 0;
        return 1;
    }
    return 0;
}

/* The marker travels inside a unit that bitstream parsers accept and pass through unchanged
 * (FFmpeg's h264/hevc/av1_metadata filters, which glrec uses to write colour tags): an SEI
 * user_data_unregistered NAL for H.264/HEVC, a temporal delimiter plus an ITU-T T.35 metadata
 * OBU for AV1. The payload stays under 112 bytes, so every size fits one byte. */
static uint32_t wrap_marker(GUID codec, const unsigned char *m, uint32_t n, unsigned char *out) {
    static const unsigned char uuid[16] = "glrec-nvenc-fake";
    uint32_t at = 0;
    if (same(codec, AV1_GUID)) {
        const unsigned char head[] = {0x12, 0x00, 0x2a, (unsigned char)(n + 3), 4, 0xB5};
        memcpy(out, head, sizeof head);
        at = sizeof head;
        memcpy(out + at, m, n);
        at += n;
        out[at++] = 0x80;
        return at;
    }
    const unsigned char h264[] = {0, 0, 0, 1, 0x06}, hevc[] = {0, 0, 0, 1, 0x4e, 0x01};
    const unsigned char *head = same(codec, NV_ENC_CODEC_HEVC_GUID) ? hevc : h264;
    uint32_t head_size = same(codec, NV_ENC_CODEC_HEVC_GUID) ? sizeof hevc : sizeof h264;
    memcpy(out, head, head_size);
    at = head_size;
    out[at++] = 5; /* payloadType user_data_unregistered */
    out[at++] = (unsigned char)(16 + n);
    memcpy(out + at, uuid, 16);
    at += 16;
    memcpy(out + at, m, n);
    at += n;
    out[at++] = 0x80; /* rbsp trailing bits */
    return at;
}

static NVENCSTATUS NVENCAPI encode_picture(void *encoder, NV_ENC_PIC_PARAMS *p) {
    struct session *s = encoder;
    if (!s->initialised) return fail(NV_ENC_ERR_ENCODER_NOT_INITIALIZED, "encode before initialisation");
    if (p->encodePicFlags & NV_ENC_PIC_FLAG_EOS) {
        logf_("{\"event\": \"eos\", \"session\": %d, \"pictures\": %u}", s->id, s->pictures);
        return NV_ENC_SUCCESS;
    }
    struct surface *f = find_surface(s, p->inputBuffer);
    struct bitstream *b = find_bitstream(s, p->outputBitstream);
    if (!f || !b) return fail(NV_ENC_ERR_INVALID_PTR, "unknown input surface or output bitstream");
    unsigned n = s->pictures;
    char name[4096], why[1024], planes[256];
    size_t bytes;
    struct memory_info info = {0, 0, 0};
    planes_json(f, planes, sizeof planes);
    if (dump_surface(s, f, n, name, sizeof name, &bytes, &info, why, sizeof why)) {
        static char error[1200];
        json_safe(why);
        logf_("{\"event\": \"surface_read_failed\", \"session\": %d, \"picture\": %u, \"surface_ptr\": %llu, "
              "\"bytes\": %zu, \"context\": %llu, \"stream\": %llu, \"resource_type\": %d, \"surface_format\": %u, "
              "\"surface_width\": %u, \"surface_height\": %u, \"surface_pitch\": %u, \"planes\": %s, "
              "\"memory_type\": %u, \"alloc_base\": %llu, \"alloc_size\": %zu, \"why\": \"%s\"}",
              s->id, n, (unsigned long long)(uintptr_t)f->ptr, bytes, (unsigned long long)(uintptr_t)s->cuda_context,
              (unsigned long long)(uintptr_t)s->input_stream, f->resource_type, f->format & 0x7fffffffu, f->width,
              f->height, f->pitch, planes, info.memory_type, info.base, info.size, why);
        snprintf(error, sizeof error, "reading input surface of picture %u failed: %s", n, why);
        return fail(NV_ENC_ERR_GENERIC, error);
    }
    s->pictures++;
    uint32_t period = s->idr_period ? s->idr_period : s->gop;
    NV_ENC_PIC_TYPE type = NV_ENC_PIC_TYPE_P;
    if (n == 0 || (p->encodePicFlags & NV_ENC_PIC_FLAG_FORCEIDR) || (period && n % period == 0))
        type = NV_ENC_PIC_TYPE_IDR;
    else if (p->encodePicFlags & NV_ENC_PIC_FLAG_FORCEINTRA)
        type = NV_ENC_PIC_TYPE_I;
    logf_("{\"event\": \"encode\", \"session\": %d, \"picture\": %u, \"frameIdx\": %u, \"inputTimeStamp\": %llu, "
          "\"inputDuration\": %llu, \"encodePicFlags\": %u, \"pictureType\": %d, \"bufferFmt\": %u, "
          "\"inputWidth\": %u, \"inputHeight\": %u, \"inputPitch\": %u, \"surface_format\": %u, "
          "\"surface_width\": %u, \"surface_height\": %u, \"surface_pitch\": %u, \"surface_ptr\": %llu, "
          "\"resource_type\": %d, \"planes\": %s, \"memory_type\": %u, \"alloc_base\": %llu, \"alloc_size\": %zu, "
          "\"type\": %d, \"dump\": \"%s\", \"dump_bytes\": %zu}",
          s->id, n, p->frameIdx, (unsigned long long)p->inputTimeStamp, (unsigned long long)p->inputDuration,
          p->encodePicFlags, p->pictureType, p->bufferFmt, p->inputWidth, p->inputHeight, p->inputPitch,
          f->format & 0x7fffffffu, f->width, f->height, f->pitch, (unsigned long long)(uintptr_t)f->ptr,
          f->resource_type, planes, info.memory_type, info.base, info.size, type, name, name[0] ? bytes : 0);
    /* ASCII, so the marker never holds the zero runs that H.264/HEVC would have to escape */
    char marker[96];
    int length = snprintf(marker, sizeof marker, "GLRECFAKE picture=%u frameIdx=%u timestamp=%llu type=%d flags=%u;", n,
                          p->frameIdx, (unsigned long long)p->inputTimeStamp, type, p->encodePicFlags);
    b->size = wrap_marker(s->codec, (const unsigned char *)marker, (uint32_t)length, b->data);
    b->frame_idx = p->frameIdx;
    b->timestamp = p->inputTimeStamp;
    b->type = type;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI lock_bitstream(void *encoder, NV_ENC_LOCK_BITSTREAM *p) {
    struct bitstream *b = find_bitstream(encoder, p->outputBitstream);
    if (!b) return NV_ENC_ERR_INVALID_PTR;
    p->bitstreamBufferPtr = b->data;
    p->bitstreamSizeInBytes = b->size;
    p->frameIdx = b->frame_idx;
    p->outputTimeStamp = b->timestamp;
    p->outputDuration = 0;
    p->pictureType = b->type;
    p->pictureStruct = NV_ENC_PIC_STRUCT_FRAME;
    p->numSlices = 1;
    p->hwEncodeStatus = 0;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI unlock_bitstream(void *encoder, NV_ENC_OUTPUT_PTR b) {
    return find_bitstream(encoder, b) ? NV_ENC_SUCCESS : NV_ENC_ERR_INVALID_PTR;
}

static NVENCSTATUS NVENCAPI get_sequence_params(void *encoder, NV_ENC_SEQUENCE_PARAM_PAYLOAD *p) {
    struct session *s = encoder;
    int n = snprintf(p->spsppsBuffer, p->inBufferSize, "GLRECFAKE-SEQ-%s", codec_name(s->codec));
    if (p->outSPSPPSPayloadSize) *p->outSPSPPSPayloadSize = (uint32_t)n;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI get_sequence_param_ex(void *encoder, NV_ENC_INITIALIZE_PARAMS *init,
                                                  NV_ENC_SEQUENCE_PARAM_PAYLOAD *p) {
    (void)init;
    return get_sequence_params(encoder, p);
}

static NVENCSTATUS NVENCAPI set_io_cuda_streams(void *encoder, NV_ENC_CUSTREAM_PTR in, NV_ENC_CUSTREAM_PTR out) {
    struct session *s = encoder;
    s->input_stream = in ? *(void **)in : NULL;
    logf_("{\"event\": \"set_io_cuda_streams\", \"session\": %d, \"input\": %llu, \"output\": %llu}", s->id,
          in ? (unsigned long long)(uintptr_t)*(void **)in : 0ULL,
          out ? (unsigned long long)(uintptr_t)*(void **)out : 0ULL);
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI get_encode_stats(void *encoder, NV_ENC_STAT *p) {
    (void)encoder;
    (void)p;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI invalidate_ref_frames(void *encoder, uint64_t ts) {
    struct session *s = encoder;
    logf_("{\"event\": \"invalidate_ref_frames\", \"session\": %d, \"timestamp\": %llu}", s->id,
          (unsigned long long)ts);
    return NV_ENC_SUCCESS;
}

static const char *NVENCAPI get_last_error(void *encoder) {
    (void)encoder;
    return last_error;
}

/* Entry points the contract does not use: a call says which one in the log and fails. */
#define UNUSED(name)                                                                                                   \
    static NVENCSTATUS NVENCAPI name(void) {                                                                           \
        logf_("{\"event\": \"unimplemented\", \"call\": \"" #name "\"}");                                              \
        return NV_ENC_ERR_UNIMPLEMENTED;                                                                               \
    }
UNUSED(nvEncOpenEncodeSession)
UNUSED(nvEncRegisterAsyncEvent)
UNUSED(nvEncUnregisterAsyncEvent)
UNUSED(nvEncCreateMVBuffer)
UNUSED(nvEncDestroyMVBuffer)
UNUSED(nvEncRunMotionEstimationOnly)
UNUSED(nvEncRestoreEncoderState)
UNUSED(nvEncLookaheadPicture)

EXPORT NVENCSTATUS NVENCAPI NvEncodeAPIGetMaxSupportedVersion(uint32_t *version) {
    const char *v = getenv("GLREC_FAKE_NVENC_API");
    unsigned major = 13, minor = 0;
    if (v && *v) sscanf(v, "%u.%u", &major, &minor);
    *version = (major << 4) | minor;
    return NV_ENC_SUCCESS;
}

EXPORT NVENCSTATUS NVENCAPI NvEncodeAPICreateInstance(NV_ENCODE_API_FUNCTION_LIST *f) {
    if (!f) return NV_ENC_ERR_INVALID_PTR;
    logf_("{\"event\": \"create_instance\", \"version\": %u}", f->version);
#define SET(slot, fn) f->slot = (void *)fn
    SET(nvEncOpenEncodeSession, nvEncOpenEncodeSession);
    SET(nvEncGetEncodeGUIDCount, get_guid_count);
    SET(nvEncGetEncodeProfileGUIDCount, get_profile_count);
    SET(nvEncGetEncodeProfileGUIDs, get_profiles);
    SET(nvEncGetEncodeGUIDs, get_guids);
    SET(nvEncGetInputFormatCount, get_format_count);
    SET(nvEncGetInputFormats, get_formats);
    SET(nvEncGetEncodeCaps, get_caps);
    SET(nvEncGetEncodePresetCount, get_preset_count);
    SET(nvEncGetEncodePresetGUIDs, get_preset_guids);
    SET(nvEncGetEncodePresetConfig, get_preset_config);
    SET(nvEncInitializeEncoder, initialize);
    SET(nvEncCreateInputBuffer, create_input_buffer);
    SET(nvEncDestroyInputBuffer, destroy_input_buffer);
    SET(nvEncCreateBitstreamBuffer, create_bitstream);
    SET(nvEncDestroyBitstreamBuffer, destroy_bitstream);
    SET(nvEncEncodePicture, encode_picture);
    SET(nvEncLockBitstream, lock_bitstream);
    SET(nvEncUnlockBitstream, unlock_bitstream);
    SET(nvEncLockInputBuffer, lock_input_buffer);
    SET(nvEncUnlockInputBuffer, unlock_input_buffer);
    SET(nvEncGetEncodeStats, get_encode_stats);
    SET(nvEncGetSequenceParams, get_sequence_params);
    SET(nvEncRegisterAsyncEvent, nvEncRegisterAsyncEvent);
    SET(nvEncUnregisterAsyncEvent, nvEncUnregisterAsyncEvent);
    SET(nvEncMapInputResource, map_resource);
    SET(nvEncUnmapInputResource, unmap_resource);
    SET(nvEncDestroyEncoder, destroy_encoder);
    SET(nvEncInvalidateRefFrames, invalidate_ref_frames);
    SET(nvEncOpenEncodeSessionEx, open_session_ex);
    SET(nvEncRegisterResource, register_resource);
    SET(nvEncUnregisterResource, unregister_resource);
    SET(nvEncReconfigureEncoder, reconfigure);
    SET(nvEncCreateMVBuffer, nvEncCreateMVBuffer);
    SET(nvEncDestroyMVBuffer, nvEncDestroyMVBuffer);
    SET(nvEncRunMotionEstimationOnly, nvEncRunMotionEstimationOnly);
    SET(nvEncGetLastErrorString, get_last_error);
    SET(nvEncSetIOCudaStreams, set_io_cuda_streams);
    SET(nvEncGetEncodePresetConfigEx, get_preset_config_ex);
    SET(nvEncGetSequenceParamEx, get_sequence_param_ex);
#undef SET
    /* API 12.1+ adds nvEncRestoreEncoderState and nvEncLookaheadPicture in the first two
     * slots after nvEncGetSequenceParamEx (reserved2 in the 11.1 header). */
    f->reserved2[0] = (void *)nvEncRestoreEncoderState;
    f->reserved2[1] = (void *)nvEncLookaheadPicture;
    return NV_ENC_SUCCESS;
}
