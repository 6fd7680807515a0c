import re
base='/work/main/suites/templates/'
zh_macro='''{% macro earlier(inputs, persona) -%}
{% if inputs.sessions %}你们之前的几次聊天：
{% for s in inputs.sessions %}【{{ s.date }}】
{{ transcript(s.history, persona) }}
{% endfor %}
今天是 {{ inputs.date }}。
{% endif %}
{%- endmacro %}
'''
en_macro='''{% macro earlier(inputs, persona) -%}
{% if inputs.sessions %}Your earlier chats with the user:
{% for s in inputs.sessions %}[{{ s.date }}]
{{ transcript(s.history, persona) }}
{% endfor %}
Today is {{ inputs.date }}.
{% endif %}
{%- endmacro %}
'''
for lang, macro in (('zh', zh_macro), ('en', en_macro)):
    p=f'{base}{lang}/_macros.j2'
    s=open(p).read()
    if 'macro earlier' not in s:
        s=s.rstrip('\n')+'\n'+macro
    open(p,'w').write(s)
    for stem in ['dialogue_base','dialogue_emotion','dialogue_schedule','recollection_synthesize']:
        p=f'{base}{lang}/{stem}.j2'
        s=open(p).read()
        if 'm.earlier(' in s: continue
        lines=s.split('\n')
        # insert before the line that introduces the transcript of inputs.history
        idx=[i for i,l in enumerate(lines) if 'm.transcript(inputs.history' in l][0]
        intro=idx-1 if lines[idx-1].strip() and not lines[idx-1].startswith('{%') else idx
        lines.insert(intro, '{{ m.earlier(inputs, persona) }}')
        open(p,'w').write('\n'.join(lines))
    p=f'{base}{lang}/dialogue_schedule.j2'
    s=open(p).read()
    s=s.replace('不超过 60 个字','不超过 80 个字').replace('at most 60 words','at most 80 words')
    open(p,'w').write(s)
