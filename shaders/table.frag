#version 430 core
// Writes every ground-truth pass in the same draw as the colour (see glrec/dataset/gbuffer.py).
in vec3 world;
in vec3 world_normal;
in vec3 eye_position;
in vec3 eye_normal;
flat in vec4 base;            // rgb, then the checker contrast (0: plain, > 0: the table top)
flat in uvec2 ids;            // instance id, class id
flat in vec4 light;          // direction the light travels (unit), then the ambient term
flat in vec3 eye;
layout(location = 0) out vec4 out_colour;
layout(location = 1) out float out_depth;
layout(location = 2) out uint out_instance;
layout(location = 3) out uint out_class;
layout(location = 4) out vec4 out_normal;
void main() {
    vec3 light_dir = light.xyz;
    float ambient = light.w;
    vec3 n = normalize(world_normal);
    vec3 colour = base.rgb;
    float checker = base.a;
    if (checker > 0.0) {
        float cell = mod(floor(world.x * 4.0) + floor(world.z * 4.0), 2.0);
        colour *= 1.0 - checker * cell;
    }
    float diffuse = max(dot(n, -light_dir), 0.0);
    vec3 h = normalize(-light_dir + normalize(eye - world));
    float spec = pow(max(dot(n, h), 0.0), 32.0) * 0.3;
    out_colour = vec4(colour * (ambient + (1.0 - ambient) * diffuse) + vec3(spec), 1.0);
    out_depth = -eye_position.z;  // OpenCV camera z
    out_instance = ids.x;
    out_class = ids.y;
    vec3 en = normalize(eye_normal);
    out_normal = vec4(en.x, -en.y, -en.z, 0.0);  // OpenCV camera axes: y down, z forward
}
