#version 430
#ifndef LAYERED
#define LAYERED 0
#endif
#ifndef MASKED
#define MASKED 0
#endif
#ifndef ROWS
#define ROWS 0
#endif
// Dataset passes, packed on the GPU into the bytes their files hold, so the host reads
// back only those bytes: rows top-down (GL stores them bottom-up), then per pass
//   rgb       3 bytes per pixel (RGB of the colour target)
//   depth     float32 camera z, as rendered
//   instance  uint16 id, semantic uint16 class (the ids' 16-bit range is checked by the box pass)
//   normal    NORMAL 1: uint8 RGB round((n + 1) * 127.5), 0 where n = 0 (no surface);
//             NORMAL 2: float32 xyz
// each section little-endian, pixels in row-major order, starting at its word offset.
// One invocation makes 4 consecutive pixels of the row-major image, so every section
// gets whole 32-bit words (3 for RGB, 1 per pixel for depth, 2 for the ids...).
// Defines: RGB, DEPTH, INSTANCE, SEMANTIC (0/1), NORMAL (0, 1, 2), LAYERED (0/1: the targets are
// texture arrays, one sample per layer; work group row y packs layer y at y * stride words),
// MASKED (0/1, LAYERED only: the targets but colour were not cleared; a pixel's depth, ids and normal
// are read where the depth-test buffer was written (< 1) and are the cleared 0 elsewhere),
// ROWS (0/1: the PNG passes, ids and 8-bit normals, go to the Scratch buffer, scratch_stride words per
// layer, where dataset_rows.comp makes them PNG scanlines in Out).
layout(local_size_x = 64) in;

#if LAYERED
layout(binding = 0) uniform sampler2DArray colour_tex;
layout(binding = 1) uniform sampler2DArray depth_tex;
layout(r32ui, binding = 2) readonly uniform uimage2DArray instance_img;
layout(r32ui, binding = 3) readonly uniform uimage2DArray semantic_img;
layout(binding = 4) uniform sampler2DArray normal_tex;
#if MASKED
layout(binding = 5) uniform sampler2DArray drawn_tex;  // the depth-test buffer
#endif
#define FETCH(t, p) texelFetch(t, ivec3(p, layer), 0)
#define LOAD(i, p) imageLoad(i, ivec3(p, layer))
#else
layout(binding = 0) uniform sampler2D colour_tex;
layout(binding = 1) uniform sampler2D depth_tex;
// Integer targets are read as images: llvmpipe's integer texel fetch is several times slower.
layout(r32ui, binding = 2) readonly uniform uimage2D instance_img;
layout(r32ui, binding = 3) readonly uniform uimage2D semantic_img;
layout(binding = 4) uniform sampler2D normal_tex;
#define FETCH(t, p) texelFetch(t, p, 0)
#define LOAD(i, p) imageLoad(i, p)
#endif
layout(std430, binding = 0) writeonly buffer Out { uint words[]; };

uniform ivec2 size;
uniform int at_rgb;       // word offset of each section
uniform int at_depth;
uniform int at_instance;
uniform int at_semantic;
uniform int at_normal;
uniform int stride;       // words from one layer's sample to the next (LAYERED)
#if ROWS
layout(std430, binding = 6) writeonly buffer Scratch { uint scratch[]; };
uniform int scratch_stride;
#define PNG_OUT(at, i) scratch[LAYERED * layer * scratch_stride + (at) + (i)]
#else
#define PNG_OUT(at, i) words[o + (at) + (i)]
#endif

uint pack_bytes(uint a, uint b, uint c, uint d) { return a | (b << 8) | (c << 16) | (d << 24); }

// The same arithmetic as numpy's float32 rint(n * 127.5 + 127.5): two roundings (no fused
// multiply-add, hence precise), round half to even, clipped to 0..255.
uint normal_byte(float n) {
    precise float v = n * 127.5;
    precise float w = v + 127.5;
    return uint(clamp(roundEven(w), 0.0, 255.0));
}

void main() {
    int g = int(gl_GlobalInvocationID.x);
    int layer = int(gl_GlobalInvocationID.y);
    int o = LAYERED * layer * stride;
    int p0 = 4 * g;
    int total = size.x * size.y;
    if (p0 >= total) return;
    // The 4 pixels' texels: row-major index -> (x, row from the bottom), wrapping at the row end.
    ivec2 at[4];
    bool inside[4];
    int y = p0 / size.x;
    int x = p0 - y * size.x;
    for (int i = 0; i < 4; i++) {
        inside[i] = p0 + i < total;
        at[i] = ivec2(x, size.y - 1 - y);
        x++;
        if (x == size.x) {
            x = 0;
            y++;
        }
    }
    // Where the passes other than colour hold what was drawn (the rest: their cleared value, 0).
    bool drawn[4];
    for (int i = 0; i < 4; i++) {
#if MASKED
        drawn[i] = inside[i] && FETCH(drawn_tex, at[i]).r < 1.0;
#else
        drawn[i] = inside[i];
#endif
    }
    uint b[12];
    uint ids[4];
#if RGB
    for (int i = 0; i < 4; i++) {
        vec3 c = inside[i] ? FETCH(colour_tex, at[i]).rgb : vec3(0.0);
        uvec3 u = uvec3(c * 255.0 + 0.5);
        b[3 * i] = u.r; b[3 * i + 1] = u.g; b[3 * i + 2] = u.b;
    }
    for (int j = 0; j < 3; j++) words[o + at_rgb + 3 * g + j] = pack_bytes(b[4 * j], b[4 * j + 1], b[4 * j + 2], b[4 * j + 3]);
#endif
#if DEPTH
    for (int i = 0; i < 4; i++) {
        float z = drawn[i] ? FETCH(depth_tex, at[i]).r : 0.0;
        words[o + at_depth + p0 + i] = floatBitsToUint(z);
    }
#endif
#if INSTANCE
    for (int i = 0; i < 4; i++) ids[i] = drawn[i] ? LOAD(instance_img, at[i]).r & 0xFFFFu : 0u;
    PNG_OUT(at_instance, 2 * g) = ids[0] | (ids[1] << 16);
    PNG_OUT(at_instance, 2 * g + 1) = ids[2] | (ids[3] << 16);
#endif
#if SEMANTIC
    for (int i = 0; i < 4; i++) ids[i] = drawn[i] ? LOAD(semantic_img, at[i]).r & 0xFFFFu : 0u;
    PNG_OUT(at_semantic, 2 * g) = ids[0] | (ids[1] << 16);
    PNG_OUT(at_semantic, 2 * g + 1) = ids[2] | (ids[3] << 16);
#endif
#if NORMAL
    for (int i = 0; i < 4; i++) {
        vec3 n = drawn[i] ? FETCH(normal_tex, at[i]).xyz : vec3(0.0);
#if NORMAL == 1
        bool none = all(equal(n, vec3(0.0)));
        b[3 * i] = none ? 0u : normal_byte(n.x);
        b[3 * i + 1] = none ? 0u : normal_byte(n.y);
        b[3 * i + 2] = none ? 0u : normal_byte(n.z);
#else
        words[o + at_normal + 3 * (p0 + i)] = floatBitsToUint(n.x);
        words[o + at_normal + 3 * (p0 + i) + 1] = floatBitsToUint(n.y);
        words[o + at_normal + 3 * (p0 + i) + 2] = floatBitsToUint(n.z);
#endif
    }
#if NORMAL == 1
    for (int j = 0; j < 3; j++) PNG_OUT(at_normal, 3 * g + j) = pack_bytes(b[4 * j], b[4 * j + 1], b[4 * j + 2], b[4 * j + 3]);
#endif
#endif
}
