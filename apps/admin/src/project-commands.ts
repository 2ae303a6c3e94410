import { adminCommand, table } from './admin-command';

export const projects = adminCommand({
  name: 'projects',
  line: 'the projects this key sees',
  synopsis: '[options]',
  summary: 'Lists the projects this key sees, oldest first.',
  flags: {},
  examples: ['npm run admin -- projects --json'],
  async run(client) {
    const { projects } = await client().graphql<{
      projects: { name: string; description: string; createdAt: string }[];
    }>('{ projects { name description createdAt } }');
    return {
      json: projects,
      text: table(
        ['PROJECT', 'CREATED', 'DESCRIPTION'],
        projects.map((p) => [p.name, p.createdAt, p.description]),
      ),
    };
  },
});

export const createProject = adminCommand({
  name: 'create-project',
  line: 'a new project (admin key over every project)',
  synopsis: 'NAME [--description T] [options]',
  summary: 'Creates a project; keys confined to it see only its runs.',
  flags: {
    description: {
      type: 'string',
      value: 'T',
      help: 'what the project is for',
      byDefault: 'empty',
    },
  },
  positionals: ['NAME'],
  examples: ['npm run admin -- create-project lab-a --description "navigation agents"'],
  async run(client, values, [name]) {
    const { createProject } = await client().graphql<{ createProject: { name: string } }>(
      'mutation($n: String!, $d: String) { createProject(name: $n, description: $d) { name description createdAt } }',
      { n: name, d: values.description ?? null },
    );
    return { json: createProject, text: `created project ${createProject.name}` };
  },
});
