#version 430
// JPEG pass 1 of 4: one work group per 8x8 block of one component; one invocation per sample.
// RGBA8 texel -> JFIF YCbCr (BT.601, full range, 16-bit fixed point), chroma averaged over 2x2
// for 4:2:0, forward DCT as two integer matrix products, quantisation rounded to nearest, the
// 64 coefficients stored in zigzag order. Integer arithmetic only, so the bytes are the same on
// every GL that runs it. Defines: SUB (1: 4:4:4, 2: 4:2:0), BLOCKS (blocks per MCU).
layout(local_size_x = 8, local_size_y = 8) in;

uniform sampler2D frame;   // the render target, rows bottom-up
uniform ivec2 tex_size;    // its size; samples beyond it repeat the edge (partial MCUs, padding)
uniform int mcus_x;

layout(std430, binding = 0) writeonly buffer Coefficients { int coef[]; };
layout(std430, binding = 1) readonly buffer Tables {
    int quant[128];        // luma then chroma, row order (v * 8 + u)
    int zigzag_pos[64];    // row-order index -> position in zigzag order
    int basis[64];         // round(C(u) / 2 * cos((2x + 1) u pi / 16) * 2^13), [u * 8 + x]
};

shared int samples[64];
shared int rows[64];

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
    ivec2 mcu = ivec2(gl_WorkGroupID.xy);
    int z = int(gl_WorkGroupID.z);
    ivec2 l = ivec2(gl_LocalInvocationID.xy);
    int value;
    if (z < SUB * SUB) {  // luma block z of the MCU
        ivec2 p = mcu * (8 * SUB) + ivec2(z % SUB, z / SUB) * 8 + l;
        ivec3 c = rgb_at(p);
        value = (19595 * c.r + 38470 * c.g + 7471 * c.b + 32768) >> 16;
    } else {
        int which = z - SUB * SUB;
        ivec2 p = mcu * (8 * SUB) + l * SUB;
        int sum = 0;
        for (int dy = 0; dy < SUB; dy++)
            for (int dx = 0; dx < SUB; dx++) sum += chroma_fixed(rgb_at(p + ivec2(dx, dy)), which);
        int shift = 16 + 2 * (SUB - 1);
        value = ((sum + (1 << (shift - 1))) >> shift) + 128;
        value = clamp(value, 0, 255);
    }
    samples[l.y * 8 + l.x] = value - 128;
    barrier();
    // Rows: rows[y][u] = 4 * (1-D DCT of row y at u), rounded.
    {
        int u = l.x, y = l.y, s = 0;
        for (int x = 0; x < 8; x++) s += basis[u * 8 + x] * samples[y * 8 + x];
        rows[y * 8 + u] = (s + (1 << 10)) >> 11;
    }
    barrier();
    // Columns: s = 2^15 * F(u, v); quantised with rounding half away from zero.
    int u = l.x, v = l.y, s = 0;
    for (int y = 0; y < 8; y++) s += basis[v * 8 + y] * rows[y * 8 + u];
    int q = quant[(z < SUB * SUB ? 0 : 64) + v * 8 + u] << 15;
    int m = (abs(s) + (q >> 1)) / q;
    int block = (mcu.y * mcus_x + mcu.x) * BLOCKS + z;
    coef[block * 64 + zigzag_pos[v * 8 + u]] = s < 0 ? -m : m;
}
