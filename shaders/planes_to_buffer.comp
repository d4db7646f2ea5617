#version 430
// Shared handoff: copy a converted frame's plane textures (r8 / rg8 / rgba8, rows
// top-down already) into a buffer laid out like the host path's frames: planes
// back to back, rows tightly packed. One invocation writes one 32-bit word, i.e.
// four consecutive bytes of the frame, so every write is a whole word (no races).
// WORDS 1: every texture holds 4 bytes per texel (rgba8) and every plane starts at a
// multiple of 4, so a word is exactly one texel: one fetch instead of four.
// The buffer's storage is CUDA memory: CUDA reads the frame where this writes it.
layout(local_size_x = 256) in;

layout(binding = 0) uniform sampler2D plane0;
layout(binding = 1) uniform sampler2D plane1;
layout(binding = 2) uniform sampler2D plane2;
layout(std430, binding = 0) writeonly buffer Frame { uint words[]; };

uniform int nplanes;
uniform ivec3 start;       // byte offset of each plane in the frame
uniform ivec3 row_bytes;   // texture width * components, per plane
uniform ivec3 comps;       // components per texel, per plane
uniform int total;         // bytes in the frame

uint byte_at(int k) {
    if (k >= total) return 0u;
    int p = (nplanes > 2 && k >= start.z) ? 2 : (nplanes > 1 && k >= start.y) ? 1 : 0;
    int local = k - start[p];
    int y = local / row_bytes[p];
    int x = (local - y * row_bytes[p]) / comps[p];
    int c = local - y * row_bytes[p] - x * comps[p];
    vec4 t = p == 0 ? texelFetch(plane0, ivec2(x, y), 0)
           : p == 1 ? texelFetch(plane1, ivec2(x, y), 0) : texelFetch(plane2, ivec2(x, y), 0);
    return uint(t[c] * 255.0 + 0.5);
}

void main() {
    int w = int(gl_GlobalInvocationID.x);
    int k = 4 * w;
    if (k >= total) return;
#if WORDS
    int p = (nplanes > 2 && k >= start.z) ? 2 : (nplanes > 1 && k >= start.y) ? 1 : 0;
    int local = (k - start[p]) / 4;
    int texels = row_bytes[p] / 4;
    ivec2 xy = ivec2(local % texels, local / texels);
    vec4 t = p == 0 ? texelFetch(plane0, xy, 0) : p == 1 ? texelFetch(plane1, xy, 0) : texelFetch(plane2, xy, 0);
    words[w] = packUnorm4x8(t);
#else
    words[w] = byte_at(k) | (byte_at(k + 1) << 8) | (byte_at(k + 2) << 16) | (byte_at(k + 3) << 24);
#endif
}
