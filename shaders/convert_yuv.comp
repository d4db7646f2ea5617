#version 430
// Convert stage: the rendered RGBA texture (rows bottom-up, as GL stores them)
// becomes planar YUV with rows top-down, as video stores them.
//
// Each plane texture holds its plane's bytes tightly packed, PACK_Y (Y) or PACK_C
// (U, V, or NV12's interleaved UV) bytes per texel: rgba8 for 4, rg8 for 2, r8 for 1,
// chosen by the host as the largest that divides the plane's row length. So a texel
// is PACK consecutive bytes of a row and one imageStore writes them all: per-byte
// stores into r8 images cost most of this pass on software GL.
//
// One invocation makes RUN horizontally adjacent chroma samples (each from a
// SUB_X x SUB_Y block of luma) and every luma byte of those blocks; RUN is chosen so
// that the bytes of one invocation fill whole texels of every plane.
// Defines: SUB_X, SUB_Y (2,2 for 4:2:0; 1,1 for 4:4:4), INTERLEAVED (1 = NV12), PACK_Y, PACK_C, RUN.
layout(local_size_x = 8, local_size_y = 8) in;

#if PACK_Y == 4
#define Y_FORMAT rgba8
#elif PACK_Y == 2
#define Y_FORMAT rg8
#else
#define Y_FORMAT r8
#endif
#if PACK_C == 4
#define C_FORMAT rgba8
#elif PACK_C == 2
#define C_FORMAT rg8
#else
#define C_FORMAT r8
#endif

layout(binding = 0) uniform sampler2D src;
layout(Y_FORMAT, binding = 0) writeonly uniform image2D plane_y;
#if INTERLEAVED
layout(C_FORMAT, binding = 1) writeonly uniform image2D plane_uv;
#define C_BYTES (2 * RUN)
#else
layout(C_FORMAT, binding = 1) writeonly uniform image2D plane_u;
layout(C_FORMAT, binding = 2) writeonly uniform image2D plane_v;
#define C_BYTES RUN
#endif
#define Y_BYTES (RUN * SUB_X)

uniform ivec2 src_size;   // rendered size
uniform ivec2 dst_size;   // encoded size (padded to even for 4:2:0)
uniform vec3 luma;        // Kr, Kg, Kb
uniform vec2 chroma_div;  // 2(1-Kb), 2(1-Kr)
uniform vec2 y_range;     // scale, offset (0..255 units)
uniform vec2 c_range;     // scale, offset (0..255 units)

vec3 fetch(ivec2 p) {
    // Padding replicates the last row/column rather than inventing black.
    p = clamp(p, ivec2(0), src_size - 1);
    return texelFetch(src, ivec2(p.x, src_size.y - 1 - p.y), 0).rgb;
}

float q(float v) { return clamp(floor(v + 0.5), 0.0, 255.0) / 255.0; }

// Byte k of a run goes to component k % PACK of texel k / PACK. Stores past the
// right edge of an image (the last run of a row may be partial) are discarded by GL.
vec4 texel_y(float bytes[Y_BYTES], int t) {
    vec4 out_ = vec4(0.0);
    for (int k = 0; k < PACK_Y; k++) out_[k] = bytes[t * PACK_Y + k];
    return out_;
}

vec4 texel_c(float bytes[C_BYTES], int t) {
    vec4 out_ = vec4(0.0);
    for (int k = 0; k < PACK_C; k++) out_[k] = bytes[t * PACK_C + k];
    return out_;
}

void main() {
    ivec2 c0 = ivec2(gl_GlobalInvocationID.xy) * ivec2(RUN, 1);
    if (c0.x * SUB_X >= dst_size.x || c0.y * SUB_Y >= dst_size.y) return;
    float ys[SUB_Y][Y_BYTES];
#if INTERLEAVED
    float uv[C_BYTES];
#else
    float us[C_BYTES];
    float vs[C_BYTES];
#endif
    for (int r = 0; r < RUN; r++) {
        ivec2 origin = (c0 + ivec2(r, 0)) * ivec2(SUB_X, SUB_Y);
        vec3 sum = vec3(0.0);
        for (int dy = 0; dy < SUB_Y; dy++) {
            for (int dx = 0; dx < SUB_X; dx++) {
                vec3 rgb = fetch(origin + ivec2(dx, dy));
                sum += rgb;
                ys[dy][r * SUB_X + dx] = q(dot(rgb, luma) * y_range.x + y_range.y);
            }
        }
        vec3 rgb = sum / float(SUB_X * SUB_Y);
        float y = dot(rgb, luma);
        float u = q((rgb.b - y) / chroma_div.x * c_range.x + c_range.y);
        float v = q((rgb.r - y) / chroma_div.y * c_range.x + c_range.y);
#if INTERLEAVED
        uv[2 * r] = u;
        uv[2 * r + 1] = v;
#else
        us[r] = u;
        vs[r] = v;
#endif
    }
    int ty = c0.x * SUB_X / PACK_Y;
    for (int dy = 0; dy < SUB_Y; dy++) {
        for (int t = 0; t < Y_BYTES / PACK_Y; t++) {
            imageStore(plane_y, ivec2(ty + t, c0.y * SUB_Y + dy), texel_y(ys[dy], t));
        }
    }
#if INTERLEAVED
    int tc = 2 * c0.x / PACK_C;
    for (int t = 0; t < C_BYTES / PACK_C; t++) imageStore(plane_uv, ivec2(tc + t, c0.y), texel_c(uv, t));
#else
    int tc = c0.x / PACK_C;
    for (int t = 0; t < C_BYTES / PACK_C; t++) {
        imageStore(plane_u, ivec2(tc + t, c0.y), texel_c(us, t));
        imageStore(plane_v, ivec2(tc + t, c0.y), texel_c(vs, t));
    }
#endif
}
