{{/*
The NVIDIA device plugin config file (version: v1) from nodeAgent.config, in NVIDIA's own format
(k8s-device-plugin api/config/v1: flags.migStrategy, flags.plugin.*, sharing.timeSlicing / sharing.mps
with renameByDefault, failRequestsGreaterThanOne and resources[].name/replicas).
*/}}
{{- define "kubegpu.devicePluginConfig" -}}
{{- $c := .Values.nodeAgent.config -}}
{{- $s := $c.sharing -}}
{{- if not (has $c.migStrategy (list "none" "single" "mixed")) -}}
{{- fail (printf "nodeAgent.config.migStrategy: expected none, single or mixed, got %v" $c.migStrategy) -}}
{{- end -}}
{{- if not (has $s.mode (list "none" "timeSlicing" "mps")) -}}
{{- fail (printf "nodeAgent.config.sharing.mode: expected none, timeSlicing or mps, got %v" $s.mode) -}}
{{- end -}}
{{- if and (ne $s.mode "none") (lt (int $s.replicas) 2) -}}
{{- fail (printf "nodeAgent.config.sharing.replicas: %s needs at least 2 replicas per device, got %v" $s.mode $s.replicas) -}}
{{- end -}}
version: v1
flags:
  migStrategy: {{ $c.migStrategy }}
  plugin:
    passDeviceSpecs: {{ $c.passDeviceSpecs }}
    deviceListStrategy: {{ $c.deviceListStrategy }}
    deviceIDStrategy: {{ $c.deviceIDStrategy }}
{{- if ne $s.mode "none" }}
sharing:
  {{- if eq $s.mode "timeSlicing" }}
  timeSlicing:
    renameByDefault: {{ $s.renameByDefault }}
    failRequestsGreaterThanOne: {{ $s.failRequestsGreaterThanOne }}
  {{- else }}
  mps:
    renameByDefault: {{ $s.renameByDefault }}
  {{- end }}
    resources:
    {{- range $s.resources }}
      - name: {{ . }}
        replicas: {{ int $s.replicas }}
    {{- end }}
{{- end }}
{{- end -}}
