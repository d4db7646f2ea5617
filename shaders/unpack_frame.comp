#version 430
// Source stage for CUDA frames: a frame copied (on the device) into a GL buffer, with any strides,
// becomes the RGBA8 render target, rows flipped to GL's bottom-up order. One invocation per pixel.
// Values as the host path converts them (glrec/sources/frames.py): uint8 as is, uint16 rounded to
// v / 257, floats roundEven(255 * clamp(v, 0, 1)); NaN or floats out of [0, 1] set bits in `flags`
// (1: NaN or infinite, 2: below 0, 4: above 1), which the source reads back before recording.
// Define: DTYPE 0 uint8, 1 uint16, 2 float16, 3 float32.
layout(local_size_x = 8, local_size_y = 8) in;

layout(std430, binding = 0) readonly buffer Frame { uint words[]; };
layout(std430, binding = 1) buffer Flags { uint flags; };
layout(rgba8, binding = 0) writeonly uniform image2D target;

uniform ivec2 size;     // width, height
uniform int origin;     // byte offset of element [0, 0, 0] in the buffer
uniform ivec3 stride;   // bytes between rows, pixels and channels (any sign)
uniform int channels;   // 1 (grey), 3 or 4 (alpha kept in the target, as the host upload does)
uniform float tolerance;

uint bits(int at, int width) {
    uint word = words[at >> 2];
    return (word >> uint((at & 3) * 8)) & ((width == 32) ? 0xFFFFFFFFu : ((1u << uint(width)) - 1u));
}

float value(int at) {
#if DTYPE == 0
    return float(bits(at, 8)) / 255.0;
#elif DTYPE == 1
    return float((bits(at, 16) + 128u) / 257u) / 255.0;
#else
#if DTYPE == 2
    float v = unpackHalf2x16(bits(at, 16)).x;
#else
    float v = uintBitsToFloat(words[at >> 2]);
#endif
    if (isnan(v) || isinf(v)) atomicOr(flags, 1u);
    else if (v < -tolerance) atomicOr(flags, 2u);
    else if (v > 1.0 + tolerance) atomicOr(flags, 4u);
    return roundEven(clamp(v, 0.0, 1.0) * 255.0) / 255.0;
#endif
}

void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (p.x >= size.x || p.y >= size.y) return;
    int at = origin + p.y * stride.x + p.x * stride.y;
    vec4 rgba = vec4(vec3(value(at)), 1.0);
    if (channels > 1) {
        rgba.gb = vec2(value(at + stride.z), value(at + 2 * stride.z));
        if (channels == 4) rgba.a = value(at + 3 * stride.z);
    }
    imageStore(target, ivec2(p.x, size.y - 1 - p.y), rgba);
}
