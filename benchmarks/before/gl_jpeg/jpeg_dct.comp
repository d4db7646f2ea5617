#version 430
// JPEG pass 1 of 4: one invocation per 8x8 block of one component (block = MCU * BLOCKS + z).
// RGBA8 texel -> JFIF YCbCr (BT.601, full range, 16-bit fixed point), chroma averaged over 2x2
// for 4:2:0, forward DCT as two integer matrix products, quantisation rounded to nearest, the
// 64 coefficients stored in zigzag order. Integer arithmetic only, so the bytes are the same on
// every GL that runs it. A block per invocation needs no barriers (with 64 invocations and
// shared memory per block, llvmpipe spent several times longer). Defines: SUB (1: 4:4:4,
// 2: 4:2:0), BLOCKS (blocks per MCU).
layout(local_size_x = 64) in;

uniform sampler2D frame;   // the render target, rows bottom-up
uniform ivec2 tex_size;    // its size; samples beyond it repeat the edge (partial MCUs, padding)
uniform int mcus_x;
uniform uint blocks;       // blocks in the picture

layout(std430, binding = 0) writeonly buffer Coefficients { int coef[]; };
layout(std430, binding = 1) readonly buffer Tables {
    int quant[128];        // luma then chroma, row order (v * 8 + u)
    int zigzag_pos[64];    // row-order index -> position in zigzag order
    int basis[64];         // round(C(u) / 2 * cos((2x + 1) u pi / 16) * 2^13), [u * 8 + x]
};

ivec3 rgb_at(ivec2 p) {
    p = min(p, tex_size - 1);
    vec4 c = texelFetch(frame, ivec2(p.x, tex_size.y - 1 - p.y), 0);
    return ivec3(round(c.rgb * 255.0));
}

// Cb or Cr in 16-bit fixed point, without the +128 offset.
int chroma_fixed(ivec3 c, int which) {
    if (which == 0) return -11059 * c.r - 21709 * c.g + 32768 * c.b;
    return 32768 * c.r - 27439 * c.g - 5329 * c.b;
}

void main() {
    uint id = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * 64u + gl_LocalInvocationID.x;
    if (id >= blocks) return;
    int mcu = int(id) / BLOCKS, z = int(id) % BLOCKS;
    ivec2 origin = ivec2(mcu % mcus_x, mcu / mcus_x) * (8 * SUB);
    int samples[64];
    for (int y = 0; y < 8; y++) {
        for (int x = 0; x < 8; x++) {
            int value;
            if (z < SUB * SUB) {  // luma block z of the MCU
                ivec3 c = rgb_at(origin + ivec2(z % SUB, z / SUB) * 8 + ivec2(x, y));
                value = (19595 * c.r + 38470 * c.g + 7471 * c.b + 32768) >> 16;
            } else {
                int which = z - SUB * SUB, sum = 0;
                ivec2 p = origin + ivec2(x, y) * SUB;
                for (int dy = 0; dy < SUB; dy++)
                    for (int dx = 0; dx < SUB; dx++) sum += chroma_fixed(rgb_at(p + ivec2(dx, dy)), which);
                int shift = 16 + 2 * (SUB - 1);
                value = clamp(((sum + (1 << (shift - 1))) >> shift) + 128, 0, 255);
            }
            samples[y * 8 + x] = value - 128;
        }
    }
    // Rows: rows[y][u] = 4 * (1-D DCT of row y at u), rounded.
    int rows[64];
    for (int y = 0; y < 8; y++) {
        for (int u = 0; u < 8; u++) {
            int s = 0;
            for (int x = 0; x < 8; x++) s += basis[u * 8 + x] * samples[y * 8 + x];
            rows[y * 8 + u] = (s + (1 << 10)) >> 11;
        }
    }
    // Columns: s = 2^15 * F(u, v); quantised with rounding half away from zero.
    int table = z < SUB * SUB ? 0 : 64;
    for (int v = 0; v < 8; v++) {
        for (int u = 0; u < 8; u++) {
            int s = 0;
            for (int y = 0; y < 8; y++) s += basis[v * 8 + y] * rows[y * 8 + u];
            int q = quant[table + v * 8 + u] << 15;
            int m = (abs(s) + (q >> 1)) / q;
            coef[int(id) * 64 + zigzag_pos[v * 8 + u]] = s < 0 ? -m : m;
        }
    }
}
