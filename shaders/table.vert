#version 430 core
#extension GL_ARB_shader_viewport_layer_array : enable
// The table scene: world-space lighting, camera-space ground truth. One instanced draw per
// mesh kind draws that kind's objects of every sample of a batch; each instance names its
// sample, whose camera and light come from the Samples buffer, and is drawn into the
// sample's layer (a one-sample framebuffer that is not layered ignores gl_Layer).
in vec3 in_position;
in vec3 in_normal;
// Per instance:
in mat4 i_model;
in vec4 i_colour;  // rgb, then the checker contrast (0: plain, > 0: the table top)
in uvec3 i_ids;    // instance id, class id, sample (layer)
struct SampleView {
    mat4 view;
    mat4 projection;
    vec4 light;  // direction the light travels (unit), then the ambient term
    vec4 eye;    // camera position (world), w unused
};
layout(std430, binding = 0) readonly buffer Samples { SampleView samples[]; };
out vec3 world;
out vec3 world_normal;
out vec3 eye_position;  // OpenGL eye space (z < 0 in front of the camera)
out vec3 eye_normal;
flat out vec4 base;
flat out uvec2 ids;
flat out vec4 light;
flat out vec3 eye;
void main() {
    SampleView s = samples[i_ids.z];
    mat4 model = i_model;
    mat4 view = s.view;
    base = i_colour;
    ids = i_ids.xy;
    light = s.light;
    eye = s.eye.xyz;
    vec4 w = model * vec4(in_position, 1.0);
    vec4 e = view * w;
    world = w.xyz;
    eye_position = e.xyz;
    // model and view are rotation + uniform scale, so their upper 3x3 maps normals too
    world_normal = mat3(model) * in_normal;
    eye_normal = mat3(view) * world_normal;
    gl_Position = s.projection * e;
#ifdef GL_ARB_shader_viewport_layer_array
    gl_Layer = int(i_ids.z);
#endif
}
