// An overlay for video inputs: glrec record in.mp4 -o out.mp4 --overlay examples/grade_overlay.glsl
// iChannel0 is the decoded frame. The right of a sweeping divider gets a warm grade, a vignette and
// edge lines; the left stays as decoded, so one frame shows before and after.
vec3 grade(vec3 c) {
    float l = dot(c, vec3(0.2126, 0.7152, 0.0722));
    vec3 warm = vec3(l * 1.10 + 0.04, l * 0.97 + 0.02, l * 0.80);
    return mix(c, warm, 0.65);
}

float edges(vec2 uv, vec2 px) {
    float a = dot(texture(iChannel0, uv - vec2(px.x, 0.0)).rgb - texture(iChannel0, uv + vec2(px.x, 0.0)).rgb, vec3(1.0));
    float b = dot(texture(iChannel0, uv - vec2(0.0, px.y)).rgb - texture(iChannel0, uv + vec2(0.0, px.y)).rgb, vec3(1.0));
    return clamp(length(vec2(a, b)) * 1.5, 0.0, 1.0);
}

void mainImage(out vec4 fragColor, in vec2 fragCoord) {
    vec2 uv = fragCoord / iResolution.xy;
    vec3 src = texture(iChannel0, uv).rgb;
    float split = 0.5 + 0.25 * sin(0.8 * iTime);
    vec3 col = src;
    if (uv.x > split) {
        vec2 d = uv - 0.5;
        col = grade(src) * (1.0 - 0.9 * dot(d, d));
        col = mix(col, vec3(1.0, 0.85, 0.55), 0.6 * edges(uv, 1.0 / iChannelResolution[0].xy));
    }
    col = mix(col, vec3(1.0), smoothstep(2.0, 0.0, abs(fragCoord.x - split * iResolution.x)));
    fragColor = vec4(col, 1.0);
}
