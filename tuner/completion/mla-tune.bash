# bash completion for mla-tune (installed as
# PREFIX/share/bash-completion/completions/mla-tune).  The commands and each
# command's options are read from the tool's own --help, so this file never
# falls behind the tool.
_mla_tune() {
    local cur prev cmd words
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        words=$("${COMP_WORDS[0]}" --help 2>/dev/null | awk '/^commands:/ {on = 1; next} on && !NF {exit} on {print $1}')
        COMPREPLY=($(compgen -W "$words --help --version" -- "$cur"))
        return
    fi
    case $prev in
        --db|--system-db|-o|--output|--csv|--config|--cache-dir|--space)
            COMPREPLY=($(compgen -f -- "$cur")); return;;
        --from-kernels)
            COMPREPLY=($(compgen -d -- "$cur")); return;;
        --arch)
            COMPREPLY=($(compgen -W "sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 gfx90a gfx942 gfx950" -- "$cur")); return;;
        --q-dtype) COMPREPLY=($(compgen -W "bf16 fp16" -- "$cur")); return;;
        --kv-dtype) COMPREPLY=($(compgen -W "bf16 fp16 fp8e4m3 fp8e4m3fnuz" -- "$cur")); return;;
    esac
    if [[ $cur == -* ]]; then
        words=$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
        COMPREPLY=($(compgen -W "$words --help" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _mla_tune mla-tune
