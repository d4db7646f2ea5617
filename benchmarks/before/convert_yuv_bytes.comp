#version 430
// The convert shader as it was before packed plane textures (one imageStore per byte),
// kept for benchmarks/cpu_path_variants.py to measure against. Not used by glrec.
// Convert stage: the rendered RGBA texture (rows bottom-up, as GL stores them)
// becomes planar YUV with rows top-down, as video stores them. One invocation
// per chroma sample: a SUB_X x SUB_Y block of luma plus one averaged chroma pair.
// Defines: SUB_X, SUB_Y (2,2 for 4:2:0; 1,1 for 4:4:4), INTERLEAVED (1 = NV12).
layout(local_size_x = 8, local_size_y = 8) in;

layout(binding = 0) uniform sampler2D src;
layout(r8, binding = 0) writeonly uniform image2D plane_y;
#if INTERLEAVED
layout(rg8, binding = 1) writeonly uniform image2D plane_uv;
#else
layout(r8, binding = 1) writeonly uniform image2D plane_u;
layout(r8, binding = 2) writeonly uniform image2D plane_v;
#endif

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

void main() {
    ivec2 c = ivec2(gl_GlobalInvocationID.xy);
    ivec2 origin = c * ivec2(SUB_X, SUB_Y);
    if (origin.x >= dst_size.x || origin.y >= dst_size.y) return;
    vec3 sum = vec3(0.0);
    for (int dy = 0; dy < SUB_Y; dy++) {
        for (int dx = 0; dx < SUB_X; dx++) {
            ivec2 p = origin + ivec2(dx, dy);
            vec3 rgb = fetch(p);
            sum += rgb;
            imageStore(plane_y, p, vec4(q(dot(rgb, luma) * y_range.x + y_range.y)));
        }
    }
    vec3 rgb = sum / float(SUB_X * SUB_Y);
    float y = dot(rgb, luma);
    float u = q((rgb.b - y) / chroma_div.x * c_range.x + c_range.y);
    float v = q((rgb.r - y) / chroma_div.y * c_range.x + c_range.y);
#if INTERLEAVED
    imageStore(plane_uv, c, vec4(u, v, 0.0, 0.0));
#else
    imageStore(plane_u, c, vec4(u));
    imageStore(plane_v, c, vec4(v));
#endif
}
