#version 330 core
// The table scene: world-space lighting, camera-space ground truth.
in vec3 in_position;
in vec3 in_normal;
// Per instance (one draw per mesh kind draws every object of that kind):
in mat4 i_model;
in vec4 i_colour;  // rgb, then the checker contrast (0: plain, > 0: the table top)
in uvec2 i_ids;    // instance id, class id
uniform mat4 view;
uniform mat4 projection;
out vec3 world;
out vec3 world_normal;
out vec3 eye_position;  // OpenGL eye space (z < 0 in front of the camera)
out vec3 eye_normal;
flat out vec4 base;
flat out uvec2 ids;
void main() {
    mat4 model = i_model;
    base = i_colour;
    ids = i_ids;
    vec4 w = model * vec4(in_position, 1.0);
    vec4 e = view * w;
    world = w.xyz;
    eye_position = e.xyz;
    // model and view are rotation + uniform scale, so their upper 3x3 maps normals too
    world_normal = mat3(model) * in_normal;
    eye_normal = mat3(view) * world_normal;
    gl_Position = projection * e;
}
